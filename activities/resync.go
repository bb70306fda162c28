package activities

import (
	"context"
	"time"

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
	bulkPages
	store   ResyncStore
	starter SnapshotStarter
}

// NewResyncer returns a Resyncer reading through store and starting
// snapshot deliveries with starter; concurrency below 1 means
// DefaultResyncConcurrency, a nil now time.Now.
func NewResyncer(store ResyncStore, starter SnapshotStarter, concurrency int, now func() time.Time) *Resyncer {
	return &Resyncer{bulkPages: newBulkPages(store, concurrency, DefaultResyncConcurrency, now), store: store, starter: starter}
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
	limit := r.pageLimit(in.Limit, DefaultResyncPage)
	stop := keepAlive(ctx)
	defer stop()
	ep, err := pageEndpoint(ctx, r.store, in.TenantID, in.EndpointID, ErrTypeResyncStopped)
	if err != nil {
		return ResyncPageOutput{}, err
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
	rs := &models.WebhookResync{BulkJob: models.BulkJob{ID: in.ResyncID, TenantID: in.TenantID, EndpointID: in.EndpointID, StartedAt: in.StartedAt}}
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
	err = startPaced(ctx, r.bulkPages, in.TenantID, events,
		func(ev *models.Event) string { return "snapshot " + ev.ID },
		func(ctx context.Context, ev *models.Event) error { return r.starter.StartSnapshot(ctx, ev, ep) })
	if err != nil {
		return ResyncPageOutput{}, err
	}
	out.Sent = len(events)
	p := models.ResyncProgress{Examined: in.Before.Examined + out.Examined, Sent: in.Before.Sent + out.Sent, Covered: in.Before.Covered + out.Covered}
	if err := r.store.SetResyncProgress(ctx, in.ResyncID, p); err != nil {
		return ResyncPageOutput{}, err
	}
	return out, nil
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
