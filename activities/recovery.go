package activities

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/recordhub/recordhub/models"
)

// RecoveryStore is what a recovery reads and writes; *models.Store
// satisfies it.
type RecoveryStore interface {
	GetEndpoint(ctx context.Context, tenantID, id string) (*models.WebhookEndpoint, error)
	RecoveryPage(ctx context.Context, q models.RecoveryPageQuery) ([]models.RecoveryCandidate, error)
	ReserveRecoveryReplays(ctx context.Context, recoveryID, endpointID string, eventIDs []string, workflowID func(eventID string, n int) string) (map[string]string, error)
	SetRecoveryProgress(ctx context.Context, id string, p models.RecoveryProgress) error
	CapRecovery(ctx context.Context, id, atEventID string, nextSince time.Time) error
	FinishRecovery(ctx context.Context, id, status string, p models.RecoveryProgress, why string, at time.Time) error
	BulkPaceStore
}

// ReplayStarter starts replay executions; workflows.Replayer is one. It
// is injected because the workflows package, which knows how a delivery is
// started, imports this one.
type ReplayStarter interface {
	// StartReplay starts the delivery of ev to ep as the execution
	// workflowID, replaying the attempt replayOf. An execution of that id
	// that exists already, running or closed, counts as started.
	StartReplay(ctx context.Context, ev *models.Event, ep *models.WebhookEndpoint, replayOf, workflowID string) error
	// ReplayWorkflowID is the id of the n-th replay of an event to an endpoint.
	ReplayWorkflowID(eventID, endpointID string, n int) string
}

// Recovery defaults.
const (
	// DefaultRecoveryPage is how many events one page replays: one
	// activity, one progress write.
	DefaultRecoveryPage = 100
	// DefaultRecoveryConcurrency is how many replays of a page are started
	// at once: starts are round trips to Temporal, and one at a time they
	// would run far below the rate deliveries run at.
	DefaultRecoveryConcurrency = 16
)

// Error types of the recovery's activities.
const (
	// ErrTypeRecoveryStopped: the endpoint was deleted or disabled while
	// its recovery ran; replaying on would only fail.
	ErrTypeRecoveryStopped = "RecoveryStopped"
)

// Recoverer runs bulk recoveries: the RecoverPage and
// FinishRecovery activities of the Recovery workflow.
type Recoverer struct {
	bulkPages
	store   RecoveryStore
	starter ReplayStarter
}

// NewRecoverer returns a Recoverer reading through store and starting
// replays with starter; concurrency below 1 means
// DefaultRecoveryConcurrency, a nil now time.Now.
func NewRecoverer(store RecoveryStore, starter ReplayStarter, concurrency int, now func() time.Time) *Recoverer {
	return &Recoverer{bulkPages: newBulkPages(store, concurrency, DefaultRecoveryConcurrency, now), store: store, starter: starter}
}

// RecoverPageInput asks for one page of a recovery. Its times are the
// recovery's, fixed when it was asked for, so that a retried page is the
// same page.
type RecoverPageInput struct {
	RecoveryID string    `json:"recovery_id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID string    `json:"endpoint_id"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	AsOf       time.Time `json:"as_of"`
	// After is the last event id of the previous page.
	After string `json:"after"`
	// Limit is the page size; zero means DefaultRecoveryPage.
	Limit int `json:"limit,omitempty"`
	// Before is the recovery's progress before this page; the page writes
	// it plus its own counts.
	Before models.RecoveryProgress `json:"before"`
	// MaxEvents caps the events the whole recovery finds; zero means
	// models.MaxRecoveryEvents.
	MaxEvents int `json:"max_events,omitempty"`
}

// RecoverPageOutput is what a page did.
type RecoverPageOutput struct {
	Found    int `json:"found"`
	Replayed int `json:"replayed"`
	Failed   int `json:"failed"`
	// Last is the page's last event id: the next page's After.
	Last string `json:"last"`
	// Done: no page follows.
	Done bool `json:"done"`
	// Capped: the page reached the recovery's cap with events left.
	Capped bool `json:"capped,omitempty"`
}

// RecoverPage replays one page of a recovery's events: it reads the page,
// reserves one replay per event for the recovery (the same one again when
// the page is retried), starts them, several at once, and writes the
// recovery's progress. An event no longer stored counts as failed. A
// replay start that fails fails the page, which Temporal retries: the
// starts that went through are then refused as already started, and
// counted as replayed once. The endpoint deleted or disabled stops the
// recovery (ErrTypeRecoveryStopped, not retried). An event that the
// endpoint's filter, as it is now, holds back is found and not replayed.
//
// The cap is kept here, not in the workflow, so that the workflow's
// commands are unchanged: the page that would pass it takes only what is
// left under it, reads one event more to know whether any is left, and
// if so records the recovery capped and ends it (Done).
func (r *Recoverer) RecoverPage(ctx context.Context, in RecoverPageInput) (RecoverPageOutput, error) {
	limit := r.pageLimit(in.Limit, DefaultRecoveryPage)
	// left is what the cap leaves this page and those after it; when it is
	// no more than a page (last), the page asks one event more, to tell a
	// recovery that ended exactly at its cap from one with events left.
	left := max(cmp.Or(in.MaxEvents, models.MaxRecoveryEvents)-in.Before.Found, 0)
	take, ask, last := min(limit, left), limit, left <= limit
	if last {
		ask = take + 1
	}
	// Waits at the tenant's pace are not a dead worker.
	stop := keepAlive(ctx)
	defer stop()
	ep, err := pageEndpoint(ctx, r.store, in.TenantID, in.EndpointID, ErrTypeRecoveryStopped)
	if err != nil {
		return RecoverPageOutput{}, err
	}
	page, err := r.store.RecoveryPage(ctx, models.RecoveryPageQuery{
		TenantID: in.TenantID, EndpointID: in.EndpointID, Since: in.Since, Until: in.Until, AsOf: in.AsOf,
		After: in.After, Limit: ask,
	})
	if err != nil {
		return RecoverPageOutput{}, err
	}
	var out RecoverPageOutput
	if len(page) > take {
		// Events are left past the cap: page[take] is the first of them.
		out.Capped = true
		next := page[take]
		page = page[:take]
		at := in.After
		if len(page) > 0 {
			at = page[len(page)-1].EventID
		}
		if err := r.store.CapRecovery(ctx, in.RecoveryID, at, resumeSince(next, in.Since)); err != nil {
			return RecoverPageOutput{}, err
		}
	}
	out.Found, out.Done = len(page), last || len(page) < take
	if len(page) == 0 {
		return out, nil
	}
	out.Last = page[len(page)-1].EventID
	var replay []models.RecoveryCandidate
	for _, c := range page {
		if c.Event == nil {
			out.Failed++
			continue
		}
		// The endpoint's filter of today applies, as it would to the
		// event dispatched now: an event it holds back is found, and
		// neither replayed nor failed. An unreadable body is replayed.
		if ok, err := models.NewEventMatcher(c.Event).Passes(ep); err == nil && !ok {
			continue
		}
		replay = append(replay, c)
	}
	ids := make([]string, len(replay))
	for i, c := range replay {
		ids[i] = c.EventID
	}
	wids, err := r.store.ReserveRecoveryReplays(ctx, in.RecoveryID, in.EndpointID, ids, func(eventID string, n int) string {
		return r.starter.ReplayWorkflowID(eventID, in.EndpointID, n)
	})
	if err != nil {
		return RecoverPageOutput{}, err
	}
	err = startPaced(ctx, r.bulkPages, in.TenantID, replay,
		func(c *models.RecoveryCandidate) string { return "replay of " + c.EventID },
		func(ctx context.Context, c *models.RecoveryCandidate) error {
			return r.starter.StartReplay(ctx, c.Event, ep, c.ReplayOf, wids[c.EventID])
		})
	if err != nil {
		return RecoverPageOutput{}, err
	}
	out.Replayed = len(replay)
	p := models.RecoveryProgress{Found: in.Before.Found + out.Found, Replayed: in.Before.Replayed + out.Replayed, Failed: in.Before.Failed + out.Failed}
	if err := r.store.SetRecoveryProgress(ctx, in.RecoveryID, p); err != nil {
		return RecoverPageOutput{}, err
	}
	return out, nil
}

// resumeSince is where a recovery that stopped at its cap before next
// should be followed by the next one: the time next's id was made, to the
// millisecond. Ids sort by the time they were made and a delivery starts
// after its event was written, so every event from next on has its
// deliveries at or after it. An id that is not one (never, today) gives
// the recovery's own since, which loses nothing.
func resumeSince(next models.RecoveryCandidate, since time.Time) time.Time {
	_, raw, ok := strings.Cut(next.EventID, "_")
	if !ok {
		return since
	}
	id, err := ulid.ParseStrict(strings.ToUpper(raw))
	if err != nil {
		return since
	}
	if at := ulid.Time(id.Time()).UTC(); at.After(since) {
		return at
	}
	return since
}

// FinishRecoveryInput ends a recovery.
type FinishRecoveryInput struct {
	RecoveryID string                  `json:"recovery_id"`
	Status     string                  `json:"status"`
	Progress   models.RecoveryProgress `json:"progress"`
	// Error says why a failed recovery stopped.
	Error string `json:"error,omitempty"`
}

// FinishRecovery records the end of a recovery, at this worker's clock.
func (r *Recoverer) FinishRecovery(ctx context.Context, in FinishRecoveryInput) error {
	return r.store.FinishRecovery(ctx, in.RecoveryID, in.Status, in.Progress, in.Error, r.now())
}
