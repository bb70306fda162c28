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
	BulkJob
	WindowSince time.Time
	WindowUntil time.Time
	// Found counts the events the recovery found to replay so far;
	// Replayed those whose replay it started; Failed those it could not
	// replay (the event is no longer stored).
	Found, Replayed, Failed int
	// Capped: the recovery stopped at its cap (MaxRecoveryEvents) with
	// events left in its window. CappedAtEventID is the last event it
	// took; NextSince is where the next recovery of the rest starts.
	Capped          bool
	CappedAtEventID *string
	NextSince       *time.Time
}

// Progress is the recovery's counts as its row holds them.
func (r *WebhookRecovery) Progress() RecoveryProgress {
	return RecoveryProgress{Found: r.Found, Replayed: r.Replayed, Failed: r.Failed}
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

// RunningJob is the running recovery the refusal names.
func (e *RecoveryRunningError) RunningJob() *BulkJob { return &e.Running.BulkJob }

func (e *RecoveryRunningError) conflict() *Error { return runningConflict(BulkRecovery, e.Running.ID) }

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

// columns are the progress as the recovery's row stores it.
func (p RecoveryProgress) columns() map[string]any {
	return map[string]any{"found": p.Found, "replayed": p.Replayed, "failed": p.Failed}
}

// CreateRecovery records a new recovery of endpoint e's deliveries in
// [since, until), asked for at asOf, running, numbered with the endpoint's
// next recovery number, and returns it with the workflow id that
// workflowID derives from its number (see insertBulk). An endpoint with a
// running recovery gets *RecoveryRunningError naming it (see claimBulk); a
// tenant that runs as many resyncs and recoveries as its bound,
// *TenantBulkError naming them.
func (s *Store) CreateRecovery(ctx context.Context, e *WebhookEndpoint, since, until, asOf time.Time, workflowID func(n int) string) (*WebhookRecovery, error) {
	return claimBulk(createBulkTries, BulkRecovery,
		func() (*WebhookRecovery, error) {
			r := &WebhookRecovery{
				BulkJob:     BulkJob{ID: NewID(PrefixRecovery), TenantID: e.TenantID, EndpointID: e.ID, Status: RecoveryRunning, StartedAt: asOf.UTC()},
				WindowSince: since.UTC(), WindowUntil: until.UTC(),
			}
			if err := s.insertBulk(ctx, e, BulkRecovery, &r.BulkJob, r, workflowID, nil); err != nil {
				return nil, err
			}
			return r, nil
		},
		func() (*WebhookRecovery, error) { return s.RunningRecovery(ctx, e.TenantID, e.ID) },
		func(r *WebhookRecovery) error { return &RecoveryRunningError{Running: r} })
}

// RunningRecovery returns the endpoint's running recovery, ErrNotFound
// when none runs.
func (s *Store) RunningRecovery(ctx context.Context, tenantID, endpointID string) (*WebhookRecovery, error) {
	return takeBulk[WebhookRecovery](ctx, s, "load running recovery", "status = ?", tenantID, endpointID, RecoveryRunning)
}

// GetRecovery returns one of the tenant's recoveries of an endpoint.
func (s *Store) GetRecovery(ctx context.Context, tenantID, endpointID, id string) (*WebhookRecovery, error) {
	return takeBulk[WebhookRecovery](ctx, s, "load recovery", "id = ?", tenantID, endpointID, id)
}

// SetRecoveryProgress writes a running recovery's counts (totals).
func (s *Store) SetRecoveryProgress(ctx context.Context, id string, p RecoveryProgress) error {
	return s.setBulkCounts(ctx, &WebhookRecovery{}, BulkRecovery, id, p.columns())
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
	return s.finishBulk(ctx, &WebhookRecovery{}, BulkRecovery, id, status, p.columns(), why, at)
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
