package workflows

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// A resync runs as one Resync workflow, id ResyncWorkflowID(endpoint, n).
// It pages through the current records of the endpoint's modules with the
// ResyncPage activity, each page starting one Delivery execution per
// record_snapshot event, and ends with FinishResync. The names are pinned
// from the start.
const (
	ResyncWorkflowName       = "Resync"
	ResyncPageActivityName   = "ResyncPage"
	FinishResyncActivityName = "FinishResync"
)

// resyncIDPrefix starts every resync workflow id.
const resyncIDPrefix = "webhook-resync/"

// ResyncWorkflowID is the id of an endpoint's n-th resync (n ≥ 1).
func ResyncWorkflowID(endpointID string, n int) string {
	return bulkWorkflowID(resyncIDPrefix, endpointID, n)
}

// ResyncInput is the Resync workflow's input. Position and StartedAt are
// fixed when the resync is asked for. Fields may be added, never removed
// or changed in meaning.
type ResyncInput struct {
	ResyncID   string    `json:"resync_id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID string    `json:"endpoint_id"`
	Position   string    `json:"position"`
	StartedAt  time.Time `json:"started_at"`
	// After and Progress carry the resync on into the next run.
	After    models.ResyncCursor   `json:"after"`
	Progress models.ResyncProgress `json:"progress"`
	// PageSize is the records per page; zero means activities.DefaultResyncPage.
	PageSize int `json:"page_size,omitempty"`
	// PageHeartbeat is how soon a page whose worker died is done again
	// elsewhere; zero means DefaultPageHeartbeat.
	PageHeartbeat time.Duration `json:"page_heartbeat,omitempty"`
}

// ResyncOutput is a completed resync's counts.
type ResyncOutput struct {
	Examined int `json:"examined"`
	Sent     int `json:"sent"`
	Covered  int `json:"covered"`
}

// Resync sends, page by page, the endpoint's records as record_snapshot
// events and records the outcome. A page that fails is retried by Temporal
// (a worker that dies mid-page included): it makes the same events and
// starts the same executions, which Temporal refuses as started. The
// endpoint deleted or disabled fails the resync. Every pagesPerRun pages
// it continues as new, so its history stays small however many records.
func Resync(ctx workflow.Context, in ResyncInput) (ResyncOutput, error) {
	if err := runPages(ctx, resyncWorkflow, bulkInput[activities.ResyncPageOutput](&in), in.PageHeartbeat); err != nil {
		return ResyncOutput{}, err
	}
	return ResyncOutput{Examined: in.Progress.Examined, Sent: in.Progress.Sent, Covered: in.Progress.Covered}, nil
}

var resyncWorkflow = bulkWorkflow{
	name: ResyncWorkflowName, page: ResyncPageActivityName, finish: FinishResyncActivityName,
	stopped: activities.ErrTypeResyncStopped,
}

// nextPage, add and finished make *ResyncInput a bulkInput for runPages.
func (in *ResyncInput) nextPage() any {
	return activities.ResyncPageInput{
		ResyncID: in.ResyncID, TenantID: in.TenantID, EndpointID: in.EndpointID, Position: in.Position,
		StartedAt: in.StartedAt, After: in.After, Limit: in.PageSize, Before: in.Progress,
	}
}

func (in *ResyncInput) add(page activities.ResyncPageOutput) bool {
	in.Progress.Examined += page.Examined
	in.Progress.Sent += page.Sent
	in.Progress.Covered += page.Covered
	in.After = page.Last
	return page.Done
}

func (in *ResyncInput) finished(status, why string) any {
	return activities.FinishResyncInput{ResyncID: in.ResyncID, Status: status, Progress: in.Progress, Error: why}
}

// RegisterResync registers r's activities under their pinned names (the
// Resync workflow is registered with the others by Register).
func RegisterResync(w worker.ActivityRegistry, r *activities.Resyncer) {
	w.RegisterActivityWithOptions(r.ResyncPage, activity.RegisterOptions{Name: ResyncPageActivityName})
	w.RegisterActivityWithOptions(r.FinishResync, activity.RegisterOptions{Name: FinishResyncActivityName})
}

// snapshotStartTimeout bounds the start of one snapshot delivery.
const snapshotStartTimeout = 30 * time.Second

// Snapshots starts the deliveries of snapshot events
// (activities.SnapshotStarter).
type Snapshots struct {
	Starter Starter
	// Policy is the delivery schedule from the configuration.
	Policy activities.Schedule
	// TaskQueue is where deliveries run (DefaultTaskQueue when empty).
	TaskQueue string
	// Eager asks for each delivery's first workflow task in its start's
	// answer, for a worker of this process (the page's).
	Eager bool
}

var _ activities.SnapshotStarter = (*Snapshots)(nil)

// StartSnapshot starts the delivery of the snapshot event ev to ep, as the
// execution WorkflowID(event, endpoint) like any event's delivery, or, for
// an endpoint whose ordering is "record", hands it to the record's
// sequencer, which starts that execution in its turn. An execution of that
// id that exists already counts as started.
func (s *Snapshots) StartSnapshot(ctx context.Context, ev *models.Event, ep *models.WebhookEndpoint) error {
	in, err := deliveryInput(ev, ep, s.Policy, "")
	if err != nil {
		return err
	}
	if ep.Ordered() {
		// Through the record's sequencer, in version order with its live
		// events; one that a later live event overtakes there is not sent
		// (superseded: see activities.Deliverer).
		return signalSequence(ctx, s.Starter, ev, s.TaskQueue, in, snapshotStartTimeout)
	}
	id := WorkflowID(ev.ID, ep.ID)
	// A longer bound than a live start's: a start that times out fails
	// the whole page, which then starts its events again.
	sctx, cancel := context.WithTimeout(ev.TraceContext(ctx), snapshotStartTimeout)
	defer cancel()
	_, err = s.Starter.ExecuteWorkflow(sctx, startOptions(id, cmp.Or(s.TaskQueue, DefaultTaskQueue), in, s.Eager), DeliveryWorkflowName, in)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("start snapshot delivery %s: %w", id, err)
	}
	return nil
}

// ResyncStore is what starting a resync reads and writes; *models.Store is
// one.
type ResyncStore interface {
	GetEndpoint(ctx context.Context, tenantID, id string) (*models.WebhookEndpoint, error)
	CreateResync(ctx context.Context, e *models.WebhookEndpoint, asOf time.Time, workflowID func(n int) string) (*models.WebhookResync, error)
	FinishResync(ctx context.Context, id, status string, p models.ResyncProgress, why string, at time.Time) error
	GetResync(ctx context.Context, tenantID, endpointID, id string) (*models.WebhookResync, error)
}

var _ ResyncStore = (*models.Store)(nil)

// Resyncs starts resyncs (api.Resyncer).
type Resyncs struct {
	Starter Starter
	// Describer lets Check find resyncs whose workflow is gone; nil
	// checks nothing.
	Describer Describer
	Store     ResyncStore
	// TaskQueue is where resyncs and their deliveries run
	// (DefaultTaskQueue when empty).
	TaskQueue string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// PageSize and PageHeartbeat go into each resync's input (zero: the
	// defaults).
	PageSize      int
	PageHeartbeat time.Duration
}

func (r *Resyncs) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// jobs is the start and check of resyncs with r's fields.
func (r *Resyncs) jobs() bulkJobs[*models.WebhookResync] {
	return bulkJobs[*models.WebhookResync]{
		kind: models.BulkResync, workflow: ResyncWorkflowName,
		starter: r.Starter, describer: r.Describer, taskQueue: r.TaskQueue, now: r.now,
		fail: func(ctx context.Context, rs *models.WebhookResync, why string) error {
			return r.Store.FinishResync(ctx, rs.ID, models.ResyncFailed, rs.Progress(), why, r.now())
		},
		reload: func(ctx context.Context, rs *models.WebhookResync) (*models.WebhookResync, error) {
			return r.Store.GetResync(ctx, rs.TenantID, rs.EndpointID, rs.ID)
		},
		running: func(err error) (*models.WebhookResync, bool) {
			var running *models.ResyncRunningError
			if !errors.As(err, &running) {
				return nil, false
			}
			return running.Running, true
		},
		refuse: func(rs *models.WebhookResync) error { return &models.ResyncRunningError{Running: rs} },
	}
}

// Check brings a resync that its row says is running in line with its
// workflow (see bulkJobs.check): one whose workflow never started, or
// ended without recording its end, is marked failed.
func (r *Resyncs) Check(ctx context.Context, rs *models.WebhookResync) (*models.WebhookResync, error) {
	return r.jobs().check(ctx, rs)
}

// Start starts a resync of the tenant's endpoint. A missing endpoint is
// ErrNotFound; a disabled one, or one that does not take record_snapshot
// events, a conflict; one with a resync running a
// *models.ResyncRunningError. A start that fails marks the resync failed.
func (r *Resyncs) Start(ctx context.Context, tenantID, endpointID string) (*models.WebhookResync, error) {
	asOf := r.now().UTC().Truncate(time.Microsecond)
	ep, err := r.Store.GetEndpoint(ctx, tenantID, endpointID)
	if err != nil {
		return nil, err
	}
	if !ep.Enabled {
		return nil, models.Errorf(models.KindConflict, "the endpoint is disabled; enable it (PATCH enabled true) before resyncing it")
	}
	if !ep.SubscribesSnapshots() {
		return nil, models.Errorf(models.KindConflict, "the endpoint does not take %s events; add %q to its events (PATCH) before resyncing it", models.EventRecordSnapshot, models.EventRecordSnapshot)
	}
	jobs := r.jobs()
	rs, err := jobs.create(ctx, func() (*models.WebhookResync, error) {
		return r.Store.CreateResync(ctx, ep, asOf, func(n int) string { return ResyncWorkflowID(ep.ID, n) })
	})
	if err != nil {
		return nil, err
	}
	summary := fmt.Sprintf("resync of %s: %d records as of outbox position %s", ep.ID, rs.Total, rs.Position)
	return jobs.start(ctx, rs, summary, ResyncInput{
		ResyncID: rs.ID, TenantID: tenantID, EndpointID: ep.ID, Position: rs.Position, StartedAt: rs.StartedAt,
		PageSize: r.PageSize, PageHeartbeat: r.PageHeartbeat,
	})
}
