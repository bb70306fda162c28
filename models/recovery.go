package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// PrefixRecovery starts a recovery's id.
const PrefixRecovery = "rcv_"

// Recovery states.
const (
	RecoveryRunning   = "running"
	RecoveryCompleted = "completed"
	RecoveryFailed    = "failed"
)

// WebhookRecovery is one bulk recovery of an endpoint: a
// Recovery workflow that replays, once each, the events whose deliveries
// to the endpoint started in [WindowSince, WindowUntil) and never
// succeeded. Its counts are written after each page.
type WebhookRecovery struct {
	ID          string `gorm:"primaryKey"`
	TenantID    string
	EndpointID  string
	N           int `gorm:"column:n"`
	WorkflowID  string
	WindowSince time.Time
	WindowUntil time.Time
	Status      string
	// Found counts the events the recovery found to replay so far;
	// Replayed those whose replay it started; Failed those it could not
	// replay (the event is no longer stored).
	Found, Replayed, Failed int
	// Error says why a failed recovery stopped.
	Error      string
	StartedAt  time.Time `gorm:"autoCreateTime:false"`
	FinishedAt *time.Time
	// Capped: the recovery stopped at its cap (MaxRecoveryEvents) with
	// events left in its window. CappedAtEventID is the last event it
	// took; NextSince is where the next recovery of the rest starts.
	Capped          bool
	CappedAtEventID *string
	NextSince       *time.Time
}

// MaxRecoveryEvents is the most events one recovery finds (replayed or
// failed): what one request may start is bounded. A recovery that
// reaches it completes with Capped set and says where the next one starts.
const MaxRecoveryEvents = 10000

// RecoveryRunningError refuses a recovery of an endpoint that has one
// running already; it is a conflict, and names the running one.
type RecoveryRunningError struct {
	Running *WebhookRecovery
}

func (e *RecoveryRunningError) Error() string { return e.conflict().Message }

// Unwrap makes the refusal a KindConflict *Error for callers that only
// need its kind.
func (e *RecoveryRunningError) Unwrap() error { return e.conflict() }

func (e *RecoveryRunningError) conflict() *Error {
	return Errorf(KindConflict, "recovery %s of this endpoint is running; wait for it to end (its status route) before starting another", e.Running.ID)
}

// RecoveryProgress is what a recovery has done so far.
//
// Recovery workflows and activities carry it; its JSON names are pinned to
// the field names encoding/json gave it before it had tags, which running
// executions' payloads hold.
type RecoveryProgress struct {
	Found    int `json:"Found"`
	Replayed int `json:"Replayed"`
	Failed   int `json:"Failed"`
}

// createRecoveryTries bounds CreateRecovery's attempts when the running
// recovery it collided with ended before it could be read.
const createRecoveryTries = 3

// CreateRecovery records a new recovery of endpoint e's deliveries in
// [since, until), asked for at asOf, running, numbered with the endpoint's
// next recovery number, and returns it with the workflow id that
// workflowID derives from its number. An endpoint with a running recovery
// gets *RecoveryRunningError naming it: the database holds one running
// recovery per endpoint (a partial unique index), so that processes
// racing each other cannot both start one. A tenant that runs as many
// resyncs and recoveries as its bound gets *TenantBulkError naming them. Numbers come from a counter on
// the endpoint, not from the rows, which retention deletes: a number
// refused here is not used up, and a number is never given twice.
func (s *Store) CreateRecovery(ctx context.Context, e *WebhookEndpoint, since, until, asOf time.Time, workflowID func(n int) string) (*WebhookRecovery, error) {
	for try := 1; ; try++ {
		r, err := s.createRecovery(ctx, e, since, until, asOf, workflowID)
		if !isUniqueViolation(err) {
			return r, err
		}
		running, rerr := s.RunningRecovery(ctx, e.TenantID, e.ID)
		switch {
		case rerr == nil:
			return nil, &RecoveryRunningError{Running: running}
		case !errors.Is(rerr, ErrNotFound):
			return nil, rerr
		case try == createRecoveryTries:
			return nil, Errorf(KindConflict, "another recovery of this endpoint was started at the same moment; try again")
		}
	}
}

func (s *Store) createRecovery(ctx context.Context, e *WebhookEndpoint, since, until, asOf time.Time, workflowID func(n int) string) (*WebhookRecovery, error) {
	r := &WebhookRecovery{
		ID: NewID(PrefixRecovery), TenantID: e.TenantID, EndpointID: e.ID,
		WindowSince: since.UTC(), WindowUntil: until.UTC(), Status: RecoveryRunning, StartedAt: asOf.UTC(),
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := s.checkTenantBulk(tx, e.TenantID, BulkRecovery, e.ID); err != nil {
			return err
		}
		// The update locks the endpoint's row on PostgreSQL: concurrent
		// creates of one endpoint take their numbers in turn.
		res := tx.Exec("UPDATE webhook_endpoints SET recovery_seq = recovery_seq + 1 WHERE id = ? AND tenant_id = ?", e.ID, e.TenantID)
		if res.Error != nil {
			return fmt.Errorf("next recovery number: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		if err := tx.Raw("SELECT recovery_seq FROM webhook_endpoints WHERE id = ?", e.ID).Scan(&r.N).Error; err != nil {
			return fmt.Errorf("next recovery number: %w", err)
		}
		r.WorkflowID = workflowID(r.N)
		return tx.Create(r).Error
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) || isUniqueViolation(err) || errors.As(err, new(*TenantBulkError)) {
			return nil, err
		}
		return nil, fmt.Errorf("create recovery: %w", err)
	}
	return r, nil
}

// RunningRecovery returns the endpoint's running recovery, ErrNotFound
// when none runs.
func (s *Store) RunningRecovery(ctx context.Context, tenantID, endpointID string) (*WebhookRecovery, error) {
	var r WebhookRecovery
	err := s.r.WithContext(ctx).Where("tenant_id = ? AND endpoint_id = ? AND status = ?", tenantID, endpointID, RecoveryRunning).Take(&r).Error
	if err != nil {
		return nil, notFoundOr(err, "load running recovery")
	}
	return &r, nil
}

// GetRecovery returns one of the tenant's recoveries of an endpoint.
func (s *Store) GetRecovery(ctx context.Context, tenantID, endpointID, id string) (*WebhookRecovery, error) {
	var r WebhookRecovery
	err := s.r.WithContext(ctx).Where("tenant_id = ? AND endpoint_id = ? AND id = ?", tenantID, endpointID, id).Take(&r).Error
	if err != nil {
		return nil, notFoundOr(err, "load recovery")
	}
	return &r, nil
}

// SetRecoveryProgress writes a running recovery's counts. The counts are
// totals, not increments, so that a page retried after a crash writes the
// same figures again.
func (s *Store) SetRecoveryProgress(ctx context.Context, id string, p RecoveryProgress) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Model(&WebhookRecovery{}).Where("id = ? AND status = ?", id, RecoveryRunning).
			Updates(map[string]any{"found": p.Found, "replayed": p.Replayed, "failed": p.Failed}).Error
	})
	if err != nil {
		return fmt.Errorf("recovery progress: %w", err)
	}
	return nil
}

// CapRecovery records that a running recovery reached its cap: atEventID
// is the last event it took, nextSince where the next recovery of the
// events left starts. It stays running until FinishRecovery.
func (s *Store) CapRecovery(ctx context.Context, id, atEventID string, nextSince time.Time) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Model(&WebhookRecovery{}).Where("id = ? AND status = ?", id, RecoveryRunning).
			Updates(map[string]any{"capped": true, "capped_at_event_id": atEventID, "next_since": nextSince.UTC()}).Error
	})
	if err != nil {
		return fmt.Errorf("cap recovery: %w", err)
	}
	return nil
}

// FinishRecovery ends a recovery as completed or failed (with why) at at,
// with its final counts. Finishing a finished recovery changes nothing.
func (s *Store) FinishRecovery(ctx context.Context, id, status string, p RecoveryProgress, why string, at time.Time) error {
	if status != RecoveryCompleted && status != RecoveryFailed {
		return fmt.Errorf("finish recovery: status %q is not an end", status)
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Model(&WebhookRecovery{}).Where("id = ? AND status = ?", id, RecoveryRunning).Updates(map[string]any{
			"status": status, "found": p.Found, "replayed": p.Replayed, "failed": p.Failed,
			"error": StorableText(why, maxRecoveryError), "finished_at": at.UTC(),
		}).Error
	})
	if err != nil {
		return fmt.Errorf("finish recovery: %w", err)
	}
	return nil
}

// RecoveryPageQuery asks for one page of a recovery's events.
type RecoveryPageQuery struct {
	TenantID, EndpointID string
	// Since and Until bound the deliveries' started_at: Since inclusive,
	// Until exclusive.
	Since, Until time.Time
	// AsOf is when the recovery was asked for: only rows started before
	// it count as a success or as the attempt a replay replays, so that
	// the recovery's own replays do not change its pages.
	AsOf time.Time
	// After is the last event id of the previous page; "" for the first.
	After string
	// Limit is the most events on the page.
	Limit int
}

// RecoveryCandidate is an event a recovery replays.
type RecoveryCandidate struct {
	EventID string
	// Event is nil when the event is no longer stored (retention).
	Event *Event
	// ReplayOf is the last delivery row of the event to the endpoint
	// started before AsOf: what the replay replays.
	ReplayOf string
}

// RecoveryPage returns, in event id order after q.After, up to q.Limit
// events that have a delivery row to the endpoint started in the window
// (skipped rows included) and no succeeded row started before q.AsOf.
// Rows started at or after AsOf (the recovery's own replays among them)
// change nothing, so a page asked for again, after a crash, is the same.
// It walks webhook_deliveries_endpoint_idx in event id order from After
// and stops after a page: a page reads the endpoint's rows of the events
// it passes, in the window or not, never the whole window sorted.
func (s *Store) RecoveryPage(ctx context.Context, q RecoveryPageQuery) ([]RecoveryCandidate, error) {
	if q.Limit < 1 {
		return nil, errors.New("recovery page: a positive limit is required")
	}
	since, until, asOf := q.Since.UTC(), q.Until.UTC(), q.AsOf.UTC()
	var ids []string
	err := s.r.WithContext(ctx).Raw(`
		SELECT d.event_id FROM webhook_deliveries d
		WHERE d.endpoint_id = ? AND d.event_id > ? AND d.started_at >= ? AND d.started_at < ? AND d.tenant_id = ?
		  AND NOT EXISTS (
			SELECT 1 FROM webhook_deliveries ok
			WHERE ok.event_id = d.event_id AND ok.endpoint_id = d.endpoint_id AND ok.succeeded AND ok.started_at < ?)
		GROUP BY d.event_id
		ORDER BY d.event_id
		LIMIT ?`, q.EndpointID, q.After, since, until, q.TenantID, asOf, q.Limit).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("recovery page: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []struct {
		ID      string
		EventID string
	}
	err = s.r.WithContext(ctx).Model(&WebhookDelivery{}).Select("id, event_id").
		Where("endpoint_id = ? AND event_id IN ? AND started_at < ?", q.EndpointID, ids, asOf).
		Order("started_at, id").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("recovery page: last attempts: %w", err)
	}
	last := make(map[string]string, len(ids))
	for _, r := range rows {
		last[r.EventID] = r.ID // ordered by start: the last one stays
	}
	var events []Event
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND id IN ?", q.TenantID, ids).Find(&events).Error; err != nil {
		return nil, fmt.Errorf("recovery page: events: %w", err)
	}
	byID := make(map[string]*Event, len(events))
	for i := range events {
		byID[events[i].ID] = &events[i]
	}
	out := make([]RecoveryCandidate, len(ids))
	for i, id := range ids {
		out[i] = RecoveryCandidate{EventID: id, Event: byID[id], ReplayOf: last[id]}
	}
	return out, nil
}

// ReserveRecoveryReplays reserves, in one transaction, a replay of each of
// eventIDs to the endpoint for the recovery: the next replay number of
// each (event, endpoint) pair, recorded with the workflow id that
// workflowID derives from it. An event that already has its replay in this
// recovery keeps it, so that a retried page starts the same workflow ids
// (and Temporal refuses them as already started). It returns the workflow
// id of each event.
func (s *Store) ReserveRecoveryReplays(ctx context.Context, recoveryID, endpointID string, eventIDs []string, workflowID func(eventID string, n int) string) (map[string]string, error) {
	out := make(map[string]string, len(eventIDs))
	if len(eventIDs) == 0 {
		return out, nil
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		var have []struct {
			EventID    string
			WorkflowID string
		}
		if err := tx.Raw("SELECT event_id, workflow_id FROM webhook_replays WHERE recovery_id = ? AND event_id IN ?", recoveryID, eventIDs).
			Scan(&have).Error; err != nil {
			return fmt.Errorf("replays of the recovery: %w", err)
		}
		for _, h := range have {
			out[h.EventID] = h.WorkflowID
		}
		var last []struct {
			EventID string
			N       int
		}
		if err := tx.Raw("SELECT event_id, MAX(n) AS n FROM webhook_replays WHERE endpoint_id = ? AND event_id IN ? GROUP BY event_id", endpointID, eventIDs).
			Scan(&last).Error; err != nil {
			return fmt.Errorf("last replays: %w", err)
		}
		next := make(map[string]int, len(last))
		for _, l := range last {
			next[l.EventID] = l.N
		}
		type replayRow struct {
			EventID    string
			EndpointID string
			N          int `gorm:"column:n"`
			WorkflowID string
			RecoveryID string
			CreatedAt  time.Time
		}
		var rows []replayRow
		now := s.now()
		for _, id := range eventIDs {
			if _, ok := out[id]; ok {
				continue
			}
			n := next[id] + 1
			out[id] = workflowID(id, n)
			rows = append(rows, replayRow{EventID: id, EndpointID: endpointID, N: n, WorkflowID: out[id], RecoveryID: recoveryID, CreatedAt: now})
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.Table("webhook_replays").Create(&rows).Error
	})
	if isUniqueViolation(err) {
		// A replay of one of the events was started at the same moment:
		// the caller's retry numbers past it.
		return nil, Errorf(KindConflict, "a replay of one of these events was started at the same moment; try again")
	}
	if err != nil {
		return nil, fmt.Errorf("reserve recovery replays: %w", err)
	}
	return out, nil
}
