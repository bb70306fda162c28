package workflows

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
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
	return resyncIDPrefix + endpointID + "/" + strconv.Itoa(n)
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
	pageCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    positiveOr(in.PageHeartbeat, DefaultPageHeartbeat),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 20,
			NonRetryableErrorTypes: []string{activities.ErrTypeResyncStopped},
		},
	})
	for pages := 0; ; pages++ {
		if pages == pagesPerRun {
			return ResyncOutput{}, workflow.NewContinueAsNewError(ctx, ResyncWorkflowName, in)
		}
		var page activities.ResyncPageOutput
		err := workflow.ExecuteActivity(pageCtx, ResyncPageActivityName, activities.ResyncPageInput{
			ResyncID: in.ResyncID, TenantID: in.TenantID, EndpointID: in.EndpointID, Position: in.Position,
			StartedAt: in.StartedAt, After: in.After, Limit: in.PageSize, Before: in.Progress,
		}).Get(ctx, &page)
		if err != nil {
			why := "canceled"
			if !temporal.IsCanceledError(err) {
				why = failureMessage(err)
			}
			fctx, _ := workflow.NewDisconnectedContext(ctx)
			if ferr := finishResync(fctx, in, models.ResyncFailed, why); ferr != nil {
				return ResyncOutput{}, errors.Join(err, ferr)
			}
			return ResyncOutput{}, err
		}
		in.Progress.Examined += page.Examined
		in.Progress.Sent += page.Sent
		in.Progress.Covered += page.Covered
		in.After = page.Last
		if page.Done {
			break
		}
	}
	if err := finishResync(ctx, in, models.ResyncCompleted, ""); err != nil {
		return ResyncOutput{}, err
	}
	return ResyncOutput{Examined: in.Progress.Examined, Sent: in.Progress.Sent, Covered: in.Progress.Covered}, nil
}

// finishResync runs the FinishResync activity, retried until it writes.
func finishResync(ctx workflow.Context, in ResyncInput, status, why string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	return workflow.ExecuteActivity(ctx, FinishResyncActivityName, activities.FinishResyncInput{
		ResyncID: in.ResyncID, Status: status, Progress: in.Progress, Error: why,
	}).Get(ctx, nil)
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

// Check brings a resync that its row says is running in line with its
// workflow, as Recoveries.Check does for recoveries: a workflow never
// started, or closed without recording its end, marks the row failed.
func (r *Resyncs) Check(ctx context.Context, rs *models.WebhookResync) (*models.WebhookResync, error) {
	if r.Describer == nil || rs.Status != models.ResyncRunning || r.now().Sub(rs.StartedAt) < recoverySettle {
		return rs, nil
	}
	var why string
	desc, err := r.Describer.DescribeWorkflowExecution(ctx, rs.WorkflowID, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		why = "the resync's workflow does not exist: the process that was starting it stopped first; start another resync"
	case err != nil:
		return rs, fmt.Errorf("describe resync %s: %w", rs.WorkflowID, err)
	default:
		switch st := desc.GetWorkflowExecutionInfo().GetStatus(); st {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
			return rs, nil
		default:
			why = fmt.Sprintf("the resync's workflow ended (%s) without recording its end; start another resync", strings.ToLower(st.String()))
		}
	}
	p := models.ResyncProgress{Examined: rs.Examined, Sent: rs.Sent, Covered: rs.Covered}
	if err := r.Store.FinishResync(ctx, rs.ID, models.ResyncFailed, p, why, r.now()); err != nil {
		return rs, err
	}
	return r.Store.GetResync(ctx, rs.TenantID, rs.EndpointID, rs.ID)
}

// create records the resync; a running one that Check finds has nothing
// behind it is marked failed and does not block the endpoint.
func (r *Resyncs) create(ctx context.Context, ep *models.WebhookEndpoint, asOf time.Time) (*models.WebhookResync, error) {
	wid := func(n int) string { return ResyncWorkflowID(ep.ID, n) }
	rs, err := r.Store.CreateResync(ctx, ep, asOf, wid)
	var running *models.ResyncRunningError
	if !errors.As(err, &running) {
		return rs, err
	}
	checked, cerr := r.Check(ctx, running.Running)
	if cerr != nil {
		return nil, err
	}
	if checked.Status == models.ResyncRunning {
		return nil, &models.ResyncRunningError{Running: checked}
	}
	return r.Store.CreateResync(ctx, ep, asOf, wid)
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
	rs, err := r.create(ctx, ep, asOf)
	if err != nil {
		return nil, err
	}
	in := ResyncInput{
		ResyncID: rs.ID, TenantID: tenantID, EndpointID: ep.ID, Position: rs.Position, StartedAt: rs.StartedAt,
		PageSize: r.PageSize, PageHeartbeat: r.PageHeartbeat,
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	_, err = r.Starter.ExecuteWorkflow(sctx, client.StartWorkflowOptions{
		ID:                                       rs.WorkflowID,
		TaskQueue:                                cmp.Or(r.TaskQueue, DefaultTaskQueue),
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Priority:                                 temporal.Priority{FairnessKey: tenantID},
		TypedSearchAttributes:                    temporal.NewSearchAttributes(TenantAttr.ValueSet(tenantID), EndpointAttr.ValueSet(ep.ID)),
		StaticSummary:                            fmt.Sprintf("resync of %s: %d records as of outbox position %s", ep.ID, rs.Total, rs.Position),
	}, ResyncWorkflowName, in)
	if err == nil {
		return rs, nil
	}
	const why = "Temporal did not start the resync's workflow; start another resync"
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer fcancel()
	if ferr := r.Store.FinishResync(fctx, rs.ID, models.ResyncFailed, models.ResyncProgress{}, why, r.now()); ferr != nil {
		err = errors.Join(err, ferr)
	}
	var unavailable *serviceerror.Unavailable
	if errors.As(err, &unavailable) || (sctx.Err() != nil && ctx.Err() == nil) {
		return nil, models.Errorf(models.KindUnavailable, "Temporal did not answer; try the resync again later")
	}
	return nil, fmt.Errorf("start resync %s: %w", rs.WorkflowID, err)
}
