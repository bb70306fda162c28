package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/models"
)

// ResyncStore is what a resync reads and writes; *models.Store satisfies
// it.
type ResyncStore interface {
	GetEndpoint(ctx context.Context, tenantID, id string) (*models.WebhookEndpoint, error)
	ResyncPage(ctx context.Context, q models.ResyncPageQuery) ([]models.ResyncCandidate, error)
	SaveSnapshots(ctx context.Context, events []models.Event) error
	SetResyncProgress(ctx context.Context, id string, p models.ResyncProgress) error
	FinishResync(ctx context.Context, id, status string, p models.ResyncProgress, why string, at time.Time) error
	BulkPaceStore
}

// SnapshotStarter starts the delivery of a snapshot event to its endpoint,
// one Delivery execution of the event's own id; workflows.Snapshots is
// one. An execution of that id that exists already counts as started.
type SnapshotStarter interface {
	StartSnapshot(ctx context.Context, ev *models.Event, ep *models.WebhookEndpoint) error
}

// Resync defaults.
const (
	// DefaultResyncPage is how many records one page reads: one activity,
	// one progress write.
	DefaultResyncPage = 200
	// DefaultResyncConcurrency is how many snapshot deliveries of a page
	// are started at once.
	DefaultResyncConcurrency = 16
)

// ErrTypeResyncStopped: the endpoint was deleted, disabled or no longer
// takes record_snapshot events while its resync ran.
const ErrTypeResyncStopped = "ResyncStopped"

// Resyncer runs resyncs: the ResyncPage and FinishResync activities of the
// Resync workflow.
type Resyncer struct {
	store       ResyncStore
	starter     SnapshotStarter
	concurrency int
	now         func() time.Time
}

// NewResyncer returns a Resyncer reading through store and starting
// snapshot deliveries with starter; concurrency below 1 means
// DefaultResyncConcurrency, a nil now time.Now.
func NewResyncer(store ResyncStore, starter SnapshotStarter, concurrency int, now func() time.Time) *Resyncer {
	if concurrency < 1 {
		concurrency = DefaultResyncConcurrency
	}
	if now == nil {
		now = time.Now
	}
	return &Resyncer{store: store, starter: starter, concurrency: concurrency, now: now}
}

// ResyncPageInput asks for one page of a resync. Its position and start
// are the resync's, fixed when it was asked for, so that a page done again
// makes the same events.
type ResyncPageInput struct {
	ResyncID   string    `json:"resync_id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID string    `json:"endpoint_id"`
	Position   string    `json:"position"`
	StartedAt  time.Time `json:"started_at"`
	// After is where the previous page stopped.
	After models.ResyncCursor `json:"after"`
	// Limit is the page size; zero means DefaultResyncPage.
	Limit int `json:"limit,omitempty"`
	// Before is the resync's progress before this page; the page writes
	// it plus its own counts.
	Before models.ResyncProgress `json:"before"`
}

// ResyncPageOutput is what a page did.
type ResyncPageOutput struct {
	Examined int `json:"examined"`
	Sent     int `json:"sent"`
	Covered  int `json:"covered"`
	// Last is where the page stopped: the next page's After.
	Last models.ResyncCursor `json:"last"`
	// Done: no page follows.
	Done bool `json:"done"`
}

// ResyncPage sends one page of a resync: it reads the page's records,
// keeps those no live event covers and the endpoint's filter passes, stores their snapshot events (the
// same ones again when the page is done again: their ids come from the
// resync, the record and its version), starts their deliveries, several at
// once, and writes the resync's progress. A start that fails fails the
// page, which Temporal retries: the starts that went through are then
// refused as already started.
func (r *Resyncer) ResyncPage(ctx context.Context, in ResyncPageInput) (ResyncPageOutput, error) {
	limit := in.Limit
	if limit < 1 {
		limit = DefaultResyncPage
	}
	limit = r.store.BulkPageLimit(limit)
	stop := keepAlive(ctx)
	defer stop()
	ep, err := r.store.GetEndpoint(ctx, in.TenantID, in.EndpointID)
	if errors.Is(err, models.ErrNotFound) {
		return ResyncPageOutput{}, temporal.NewNonRetryableApplicationError("the endpoint was deleted", ErrTypeResyncStopped, err)
	}
	if err != nil {
		return ResyncPageOutput{}, fmt.Errorf("load endpoint: %w", err)
	}
	if !ep.Enabled {
		return ResyncPageOutput{}, temporal.NewNonRetryableApplicationError("the endpoint was disabled", ErrTypeResyncStopped, nil)
	}
	if !ep.SubscribesSnapshots() {
		return ResyncPageOutput{}, temporal.NewNonRetryableApplicationError("the endpoint no longer takes record_snapshot events", ErrTypeResyncStopped, nil)
	}
	page, err := r.store.ResyncPage(ctx, models.ResyncPageQuery{Endpoint: ep, Position: in.Position, After: in.After, Limit: limit})
	if err != nil {
		return ResyncPageOutput{}, err
	}
	heartbeat(ctx)
	out := ResyncPageOutput{Examined: len(page), Done: len(page) < limit, Last: in.After}
	if len(page) == 0 {
		return out, nil
	}
	last := page[len(page)-1]
	out.Last = models.ResyncCursor{ModuleID: last.Module.ID, RecordID: last.Record.ID}
	rs := &models.WebhookResync{ID: in.ResyncID, TenantID: in.TenantID, EndpointID: in.EndpointID, StartedAt: in.StartedAt}
	var events []models.Event
	for i := range page {
		if page[i].Covered {
			out.Covered++
			continue
		}
		// The endpoint's content filter holds for snapshots as for live
		// events: a record it leaves out is examined, and not sent.
		if !ep.Filter.Matches(page[i].Record.Fields) {
			continue
		}
		ev, err := models.SnapshotEvent(rs, &page[i])
		if err != nil {
			return ResyncPageOutput{}, err
		}
		events = append(events, ev)
	}
	if err := r.store.SaveSnapshots(ctx, events); err != nil {
		return ResyncPageOutput{}, err
	}
	heartbeat(ctx)
	if err := r.startAll(ctx, in.TenantID, events, ep); err != nil {
		return ResyncPageOutput{}, err
	}
	out.Sent = len(events)
	p := models.ResyncProgress{Examined: in.Before.Examined + out.Examined, Sent: in.Before.Sent + out.Sent, Covered: in.Before.Covered + out.Covered}
	if err := r.store.SetResyncProgress(ctx, in.ResyncID, p); err != nil {
		return ResyncPageOutput{}, err
	}
	return out, nil
}

// startAll starts the deliveries of events, r.concurrency at a time at
// the tenant's pace, and returns the first error; after one, it starts no
// more.
func (r *Resyncer) startAll(ctx context.Context, tenantID string, events []models.Event, ep *models.WebhookEndpoint) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, r.concurrency)
		once  sync.Once
		first error
		paced = newPace(r.store, tenantID, len(events), r.now)
	)
	for i := range events {
		sem <- struct{}{}
		if err := paced.wait(sctx); err != nil && sctx.Err() == nil {
			once.Do(func() { first = err; cancel() })
		}
		if sctx.Err() != nil {
			<-sem
			break
		}
		ev := &events[i]
		wg.Go(func() {
			defer func() { <-sem }()
			if err := r.starter.StartSnapshot(sctx, ev, ep); err != nil {
				once.Do(func() {
					first = fmt.Errorf("snapshot %s: %w", ev.ID, err)
					cancel()
				})
			}
		})
		heartbeat(ctx)
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// FinishResyncInput ends a resync.
type FinishResyncInput struct {
	ResyncID string                `json:"resync_id"`
	Status   string                `json:"status"`
	Progress models.ResyncProgress `json:"progress"`
	// Error says why a failed resync stopped.
	Error string `json:"error,omitempty"`
}

// FinishResync records the end of a resync, at this worker's clock.
func (r *Resyncer) FinishResync(ctx context.Context, in FinishResyncInput) error {
	return r.store.FinishResync(ctx, in.ResyncID, in.Status, in.Progress, in.Error, r.now())
}

// keepAlive heartbeats every second until stopped, so that the heartbeat
// timeout means what it is for, a worker that died, and not a page whose
// starts are slow because Temporal is busy.
func keepAlive(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// heartbeat tells Temporal that the page's worker is alive: one step of a
// page (its read, its write, each start) is far shorter than the heartbeat
// timeout, a page is not.
func heartbeat(ctx context.Context) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx)
	}
}
