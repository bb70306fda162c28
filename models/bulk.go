package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"gorm.io/gorm"
)

// A tenant's resyncs and recoveries ("bulk sends") share two bounds, so
// that one tenant's bulk sends leave the other tenants' live deliveries
// their pace: how many of them run at once, and how many deliveries they
// start a second, together. Both hold across every process that shares
// the database: the first is checked in the transaction that records a
// resync or a recovery, the second booked in the database before each
// start (BookBulkStarts).
const (
	// BulkRunningSetting names the first bound's setting, which refusals
	// quote.
	BulkRunningSetting = "RECORDHUB_BULK_RUNNING_PER_TENANT"
	// DefaultBulkRunning is how many resyncs and recoveries of one tenant
	// run at once unless Options.BulkRunning says otherwise.
	DefaultBulkRunning = 4
	// DefaultBulkRate is how many deliveries a tenant's resyncs and
	// recoveries start a second, together, unless Options.BulkRate says
	// otherwise.
	DefaultBulkRate = 20
)

// The kinds of bulk sends.
const (
	BulkResync   = "resync"
	BulkRecovery = "recovery"
)

// BulkRun is a running resync or recovery, as a refusal names it.
type BulkRun struct {
	Kind       string
	ID         string
	EndpointID string
	WorkflowID string
}

// TenantBulkError refuses a resync or a recovery of a tenant that runs
// as many as its bound already; it is a conflict, and names them.
type TenantBulkError struct {
	Max     int
	Running []BulkRun
}

func (e *TenantBulkError) Error() string { return e.conflict().Message }

// Unwrap makes the refusal a KindConflict *Error.
func (e *TenantBulkError) Unwrap() error { return e.conflict() }

func (e *TenantBulkError) conflict() *Error {
	names := make([]string, len(e.Running))
	for i, r := range e.Running {
		names[i] = r.Kind + " " + r.ID + " of " + r.EndpointID
	}
	return Errorf(KindConflict, "the tenant runs %d resyncs and recoveries, the most %s allows (%d): %s; wait for one to end (its status route) before starting another",
		len(e.Running), BulkRunningSetting, e.Max, strings.Join(names, ", "))
}

// bulkLock is the class of the PostgreSQL advisory locks, one per tenant,
// that the transactions recording a resync or a recovery take: two of one
// tenant count its running ones in turn.
const bulkLock = 7402

// checkTenantBulk, run in the transaction that records a kind resync or
// recovery of endpointID, refuses it with *TenantBulkError when the tenant
// runs its bound already. An endpoint that runs one of the kind already is
// left to the endpoint's own refusal, which names that one.
func (s *Store) checkTenantBulk(tx *gorm.DB, tenantID, kind, endpointID string) error {
	if s.dialect == Postgres {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(?))", bulkLock, tenantID).Error; err != nil {
			return fmt.Errorf("lock the tenant's bulk sends: %w", err)
		}
	}
	var running []BulkRun
	err := tx.Raw(`SELECT 'resync' AS kind, id, endpoint_id, workflow_id, started_at FROM webhook_resyncs WHERE tenant_id = ? AND status = ?
		UNION ALL SELECT 'recovery', id, endpoint_id, workflow_id, started_at FROM webhook_recoveries WHERE tenant_id = ? AND status = ?
		ORDER BY started_at, id`,
		tenantID, ResyncRunning, tenantID, RecoveryRunning).Scan(&running).Error
	if err != nil {
		return fmt.Errorf("running resyncs and recoveries: %w", err)
	}
	if len(running) < s.bulkRunning {
		return nil
	}
	for _, r := range running {
		if r.Kind == kind && r.EndpointID == endpointID {
			return nil
		}
	}
	return &TenantBulkError{Max: s.bulkRunning, Running: running}
}

// BulkSlots are the times at which a resync or recovery may start its
// next deliveries: N of them, Every apart from First. Every zero: as
// soon as it likes (no pace).
type BulkSlots struct {
	First time.Time
	Every time.Duration
	N     int
}

// BookBulkStarts books up to n starts of the tenant's resyncs and
// recoveries at its pace, from now or after the last start booked, if
// later, and returns them: at most a second's worth, so that the tenant's
// running ones take turns a second at a time. Starts booked and not made
// (a page that failed) are lost, never made up for by a burst.
func (s *Store) BookBulkStarts(ctx context.Context, tenantID string, n int, now time.Time) (BulkSlots, error) {
	if s.bulkEvery == 0 || n < 1 {
		return BulkSlots{First: now, N: max(n, 0)}, nil
	}
	n = min(n, max(1, int(time.Second/s.bulkEvery)))
	span := int64(n) * s.bulkEvery.Microseconds()
	at := now.UnixMicro()
	greatest := "GREATEST"
	if s.dialect == SQLite {
		greatest = "MAX"
	}
	var next int64
	err := s.writeOne(ctx, func(tx *gorm.DB) error {
		return tx.Raw(`INSERT INTO bulk_paces (tenant_id, next_at) VALUES (?, ?)
			ON CONFLICT (tenant_id) DO UPDATE SET next_at = `+greatest+`(bulk_paces.next_at, ?) + ?
			RETURNING next_at`, tenantID, at+span, at, span).Scan(&next).Error
	})
	if err != nil {
		return BulkSlots{}, fmt.Errorf("book bulk starts: %w", err)
	}
	return BulkSlots{First: time.UnixMicro(next - span), Every: s.bulkEvery, N: n}, nil
}

// BulkPageLimit is the most records or events a page of a resync or
// recovery takes, at most limit: as many as its starts, at the tenant's
// pace shared with as many others as may run, make in a minute, so that
// a page ends well within its activity's timeout whatever the settings.
func (s *Store) BulkPageLimit(limit int) int {
	if s.bulkEvery == 0 {
		return limit
	}
	share := s.bulkRunning
	if share == math.MaxInt {
		share = DefaultBulkRunning
	}
	return min(limit, max(1, int(time.Minute/s.bulkEvery)/share))
}

// bulkEvery is the time between two starts at rate a second, in whole
// microseconds as the bookings are kept; zero for a negative rate (no
// pace), DefaultBulkRate's for zero.
func bulkEvery(rate int) time.Duration {
	switch {
	case rate < 0:
		return 0
	case rate == 0:
		rate = DefaultBulkRate
	}
	return time.Duration(math.Ceil(1e6/float64(rate))) * time.Microsecond
}

// bulkRunning is the bound on a tenant's running resyncs and recoveries
// that n sets: DefaultBulkRunning for zero, none for a negative n.
func bulkRunning(n int) int {
	switch {
	case n < 0:
		return math.MaxInt
	case n == 0:
		return DefaultBulkRunning
	}
	return n
}

// BulkJob is what the rows of a resync and of a recovery share: who asked
// for it, its number and workflow, and how it stands. WebhookResync and
// WebhookRecovery embed it, so that starting, checking and finishing one
// is written once for both.
type BulkJob struct {
	ID         string `gorm:"primaryKey"`
	TenantID   string
	EndpointID string
	// N is the job's number among the endpoint's jobs of its kind.
	N          int `gorm:"column:n"`
	WorkflowID string
	Status     string
	// Error says why a failed job stopped.
	Error      string
	StartedAt  time.Time `gorm:"autoCreateTime:false"`
	FinishedAt *time.Time
}

// Job returns the shared part of a resync's or recovery's row.
func (j *BulkJob) Job() *BulkJob { return j }

// runningConflict is the refusal of a kind job of an endpoint that runs
// one, id, already.
func runningConflict(kind, id string) *Error {
	return Errorf(KindConflict, "%s %s of this endpoint is running; wait for it to end (its status route) before starting another", kind, id)
}

// createBulkTries bounds the attempts to record a job when the running
// one it collided with ended before it could be read.
const createBulkTries = 3

// claimBulk runs insert, which records a new kind job of an endpoint, up
// to tries times. The database holds one running job of a kind per
// endpoint (a partial unique index), so that processes racing each other
// cannot both start one: when it refuses, running reads the running one
// and refuse names it; one that ended before it could be read is tried
// again, and after the last try the caller is told to.
func claimBulk[R any](tries int, kind string, insert func() (R, error), running func() (R, error), refuse func(R) error) (R, error) {
	var none R
	for try := 1; ; try++ {
		r, err := insert()
		if !isUniqueViolation(err) {
			return r, err
		}
		run, rerr := running()
		switch {
		case rerr == nil:
			return none, refuse(run)
		case !errors.Is(rerr, ErrNotFound):
			return none, rerr
		case try >= tries:
			return none, Errorf(KindConflict, "another %s of this endpoint was started at the same moment; try again", kind)
		}
	}
}

// insertBulk inserts row, whose shared part is job, as endpoint e's next
// kind job, in one transaction that first checks the tenant's bound
// (*TenantBulkError), numbers it from the endpoint's counter of its kind
// and gives it the workflow id workflowID derives from the number; fill,
// when set, completes the row in that transaction. Numbers come from a
// counter on the endpoint, not from the rows, which retention deletes: a
// number refused here is not used up, and a number is never given twice.
func (s *Store) insertBulk(ctx context.Context, e *WebhookEndpoint, kind string, job *BulkJob, row any, workflowID func(n int) string, fill func(tx *gorm.DB) error) error {
	seq := kind + "_seq" // recovery_seq, resync_seq
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := s.checkTenantBulk(tx, e.TenantID, kind, e.ID); err != nil {
			return err
		}
		// The update locks the endpoint's row on PostgreSQL: concurrent
		// creates of one endpoint take their numbers in turn.
		res := tx.Exec("UPDATE webhook_endpoints SET "+seq+" = "+seq+" + 1 WHERE id = ? AND tenant_id = ?", e.ID, e.TenantID)
		if res.Error != nil {
			return fmt.Errorf("next %s number: %w", kind, res.Error)
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		if err := tx.Raw("SELECT "+seq+" FROM webhook_endpoints WHERE id = ?", e.ID).Scan(&job.N).Error; err != nil {
			return fmt.Errorf("next %s number: %w", kind, err)
		}
		job.WorkflowID = workflowID(job.N)
		if fill != nil {
			if err := fill(tx); err != nil {
				return err
			}
		}
		return tx.Create(row).Error
	})
	if err == nil || errors.Is(err, ErrNotFound) || isUniqueViolation(err) || errors.As(err, new(*TenantBulkError)) {
		return err
	}
	return fmt.Errorf("create %s: %w", kind, err)
}

// takeBulk reads the tenant's job of an endpoint that cond (with args)
// picks, a *WebhookRecovery or *WebhookResync; ErrNotFound when there is
// none.
func takeBulk[R WebhookRecovery | WebhookResync](ctx context.Context, s *Store, what, cond string, args ...any) (*R, error) {
	var r R
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND endpoint_id = ? AND "+cond, args...).Take(&r).Error; err != nil {
		return nil, notFoundOr(err, what)
	}
	return &r, nil
}

// setBulkCounts writes a running job's counts (columns of model's table).
// They are totals, not increments, so that a page retried after a crash
// writes the same figures again.
func (s *Store) setBulkCounts(ctx context.Context, model any, kind, id string, counts map[string]any) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Model(model).Where("id = ? AND status = ?", id, RecoveryRunning).Updates(counts).Error
	})
	if err != nil {
		return fmt.Errorf("%s progress: %w", kind, err)
	}
	return nil
}

// finishBulk ends a running job as completed or failed (with why) at at,
// with its final counts. Finishing a finished job changes nothing: a job
// that another process ended keeps its own end.
func (s *Store) finishBulk(ctx context.Context, model any, kind, id, status string, counts map[string]any, why string, at time.Time) error {
	if status != RecoveryCompleted && status != RecoveryFailed {
		return fmt.Errorf("finish %s: status %q is not an end", kind, status)
	}
	counts["status"], counts["error"], counts["finished_at"] = status, StorableText(why, maxRecoveryError), at.UTC()
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Model(model).Where("id = ? AND status = ?", id, RecoveryRunning).Updates(counts).Error
	})
	if err != nil {
		return fmt.Errorf("finish %s: %w", kind, err)
	}
	return nil
}
