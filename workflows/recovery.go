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
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// Bulk recovery runs as one Recovery workflow per recovery, id
// RecoveryWorkflowID(endpoint, n). It pages through the endpoint's failed
// deliveries in its window with the RecoverPage activity, each page
// starting one replay execution per event, and ends with FinishRecovery.
// The names are pinned from the start.
const (
	RecoveryWorkflowName       = "Recovery"
	RecoverPageActivityName    = "RecoverPage"
	FinishRecoveryActivityName = "FinishRecovery"
)

// recoveryIDPrefix starts every recovery workflow id.
const recoveryIDPrefix = "webhook-recovery/"

// RecoveryWorkflowID is the id of an endpoint's n-th recovery (n ≥ 1).
func RecoveryWorkflowID(endpointID string, n int) string {
	return recoveryIDPrefix + endpointID + "/" + strconv.Itoa(n)
}

// pagesPerRun bounds the pages of one workflow run: past it the
// recovery continues as new, so that its history stays small however
// large the window.
const pagesPerRun = 100

// RecoveryInput is the Recovery workflow's input. The times are fixed when
// the recovery is asked for, so that every page, retried or not, sees the
// same window. Fields may be added, never removed or changed in meaning.
type RecoveryInput struct {
	RecoveryID string    `json:"recovery_id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID string    `json:"endpoint_id"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	AsOf       time.Time `json:"as_of"`
	// After and Progress carry the recovery on into the next run.
	After    string                  `json:"after,omitempty"`
	Progress models.RecoveryProgress `json:"progress"`
	// PageSize is the events per page; zero means activities.DefaultRecoveryPage.
	PageSize int `json:"page_size,omitempty"`
	// PageHeartbeat is how soon a page whose worker died is retried
	// elsewhere; zero means DefaultPageHeartbeat.
	PageHeartbeat time.Duration `json:"page_heartbeat,omitempty"`
	// MaxEvents caps the events the recovery finds; zero means
	// models.MaxRecoveryEvents. The pages keep the cap: the workflow only
	// passes it on.
	MaxEvents int `json:"max_events,omitempty"`
}

// DefaultPageHeartbeat is how long a page may go without a heartbeat
// before Temporal retries it on another worker: a page heartbeats at every
// replay it starts.
const DefaultPageHeartbeat = 15 * time.Second

// RecoveryOutput is a completed recovery's counts.
type RecoveryOutput struct {
	Found    int `json:"found"`
	Replayed int `json:"replayed"`
	Failed   int `json:"failed"`
}

// Recovery replays, page by page, the events whose deliveries to the
// endpoint failed in the window, and records the outcome. A page that
// fails is retried by Temporal (a worker that dies mid-page included);
// one that keeps failing, or the endpoint deleted or disabled, fails the
// recovery. Each page's activity writes the progress, so the status route
// shows it while the workflow runs.
func Recovery(ctx workflow.Context, in RecoveryInput) (RecoveryOutput, error) {
	pageCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		// A worker that dies mid-page is noticed within this, not at
		// the end of the page's timeout.
		HeartbeatTimeout: positiveOr(in.PageHeartbeat, DefaultPageHeartbeat),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 20,
			NonRetryableErrorTypes: []string{activities.ErrTypeRecoveryStopped},
		},
	})
	for pages := 0; ; pages++ {
		if pages == pagesPerRun {
			return RecoveryOutput{}, workflow.NewContinueAsNewError(ctx, RecoveryWorkflowName, in)
		}
		var page activities.RecoverPageOutput
		err := workflow.ExecuteActivity(pageCtx, RecoverPageActivityName, activities.RecoverPageInput{
			RecoveryID: in.RecoveryID, TenantID: in.TenantID, EndpointID: in.EndpointID,
			Since: in.Since, Until: in.Until, AsOf: in.AsOf, After: in.After, Limit: in.PageSize, Before: in.Progress,
			MaxEvents: in.MaxEvents,
		}).Get(ctx, &page)
		if err != nil {
			why := "canceled"
			if !temporal.IsCanceledError(err) {
				why = failureMessage(err)
			}
			// A canceled workflow still records its end.
			fctx, _ := workflow.NewDisconnectedContext(ctx)
			if ferr := finishRecovery(fctx, in, models.RecoveryFailed, why); ferr != nil {
				return RecoveryOutput{}, errors.Join(err, ferr)
			}
			return RecoveryOutput{}, err
		}
		in.Progress.Found += page.Found
		in.Progress.Replayed += page.Replayed
		in.Progress.Failed += page.Failed
		in.After = page.Last
		if page.Done {
			break
		}
	}
	if err := finishRecovery(ctx, in, models.RecoveryCompleted, ""); err != nil {
		return RecoveryOutput{}, err
	}
	return RecoveryOutput{Found: in.Progress.Found, Replayed: in.Progress.Replayed, Failed: in.Progress.Failed}, nil
}

// finishRecovery runs the FinishRecovery activity, retried until it
// writes: a recovery must not be left "running".
func finishRecovery(ctx workflow.Context, in RecoveryInput, status, why string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	return workflow.ExecuteActivity(ctx, FinishRecoveryActivityName, activities.FinishRecoveryInput{
		RecoveryID: in.RecoveryID, Status: status, Progress: in.Progress, Error: why,
	}).Get(ctx, nil)
}

// failureMessage is the message of the activity failure behind err, for
// the recovery's error.
func failureMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "a page timed out"
	}
	return err.Error()
}

// RegisterRecovery registers r's activities under their pinned names
// (the Recovery workflow is registered with the others by Register).
func RegisterRecovery(w worker.ActivityRegistry, r *activities.Recoverer) {
	w.RegisterActivityWithOptions(r.RecoverPage, activity.RegisterOptions{Name: RecoverPageActivityName})
	w.RegisterActivityWithOptions(r.FinishRecovery, activity.RegisterOptions{Name: FinishRecoveryActivityName})
}

// RecoveryStore is what starting a recovery reads and writes;
// *models.Store is one.
type RecoveryStore interface {
	GetEndpoint(ctx context.Context, tenantID, id string) (*models.WebhookEndpoint, error)
	CreateRecovery(ctx context.Context, e *models.WebhookEndpoint, since, until, asOf time.Time, workflowID func(n int) string) (*models.WebhookRecovery, error)
	FinishRecovery(ctx context.Context, id, status string, p models.RecoveryProgress, why string, at time.Time) error
	GetRecovery(ctx context.Context, tenantID, endpointID, id string) (*models.WebhookRecovery, error)
}

var _ RecoveryStore = (*models.Store)(nil)

// Describer reads a workflow execution's state; client.Client is one.
type Describer interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

var _ Describer = client.Client(nil)

// Recoveries starts bulk recoveries (api.Recoverer).
type Recoveries struct {
	Starter Starter
	// Describer lets Check find recoveries whose workflow is gone; nil
	// checks nothing.
	Describer Describer
	Store     RecoveryStore
	// TaskQueue is where recoveries and their replays run
	// (DefaultTaskQueue when empty).
	TaskQueue string
	// Now is the clock of the recovery's window; time.Now when nil.
	Now func() time.Time
	// PageSize and PageHeartbeat go into each recovery's input (zero:
	// the defaults).
	PageSize      int
	PageHeartbeat time.Duration
	// MaxEvents goes into each recovery's input (zero:
	// models.MaxRecoveryEvents).
	MaxEvents int
}

func (r *Recoveries) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// recoverySettle is how long after its row is written a recovery's
// workflow may still be being started (Start's own bound, twice over).
const recoverySettle = 2 * startTimeout

// Check brings a recovery that its row says is running in line with its
// workflow. A workflow that was never started (the process that wrote the
// row stopped before starting it) or that closed without recording its
// end (terminated from the Web UI, say) would leave the row running for
// ever: Check marks it failed, saying why, and answers the row read again.
// A recovery still in its first moments, a running or continued workflow,
// and a Temporal that does not answer (an error) leave rec as it is.
func (r *Recoveries) Check(ctx context.Context, rec *models.WebhookRecovery) (*models.WebhookRecovery, error) {
	if r.Describer == nil || rec.Status != models.RecoveryRunning || r.now().Sub(rec.StartedAt) < recoverySettle {
		return rec, nil
	}
	var why string
	desc, err := r.Describer.DescribeWorkflowExecution(ctx, rec.WorkflowID, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		why = "the recovery's workflow does not exist: the process that was starting it stopped first; start another recovery"
	case err != nil:
		return rec, fmt.Errorf("describe recovery %s: %w", rec.WorkflowID, err)
	default:
		switch st := desc.GetWorkflowExecutionInfo().GetStatus(); st {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
			return rec, nil
		default:
			why = fmt.Sprintf("the recovery's workflow ended (%s) without recording its end; start another recovery", strings.ToLower(st.String()))
		}
	}
	p := models.RecoveryProgress{Found: rec.Found, Replayed: rec.Replayed, Failed: rec.Failed}
	// Conditional on running: a recovery that finished meanwhile keeps
	// its own end.
	if err := r.Store.FinishRecovery(ctx, rec.ID, models.RecoveryFailed, p, why, r.now()); err != nil {
		return rec, err
	}
	return r.Store.GetRecovery(ctx, rec.TenantID, rec.EndpointID, rec.ID)
}

// create records the recovery. An endpoint with a recovery running
// refuses it (*models.RecoveryRunningError) unless Check finds that
// running one has nothing behind it (its workflow never started or ended
// without recording it): then the stale one is marked failed and the new
// one recorded, so that a lost recovery does not block its endpoint.
func (r *Recoveries) create(ctx context.Context, ep *models.WebhookEndpoint, since, end, asOf time.Time) (*models.WebhookRecovery, error) {
	wid := func(n int) string { return RecoveryWorkflowID(ep.ID, n) }
	rec, err := r.Store.CreateRecovery(ctx, ep, since, end, asOf, wid)
	var running *models.RecoveryRunningError
	if !errors.As(err, &running) {
		return rec, err
	}
	checked, cerr := r.Check(ctx, running.Running)
	if cerr != nil {
		// Temporal did not answer: the running one stands.
		return nil, err
	}
	if checked.Status == models.RecoveryRunning {
		return nil, &models.RecoveryRunningError{Running: checked}
	}
	return r.Store.CreateRecovery(ctx, ep, since, end, asOf, wid)
}

// Start starts a recovery of the tenant's endpoint for the deliveries
// started from since until until, which is capped at (and defaults to)
// now: later deliveries are not failures to recover yet. A missing
// endpoint is ErrNotFound, a disabled one a conflict (enable it first),
// an empty window invalid, one with a recovery running a
// *models.RecoveryRunningError (a conflict naming it). A start that fails
// marks the recovery failed.
func (r *Recoveries) Start(ctx context.Context, tenantID, endpointID string, since time.Time, until *time.Time) (*models.WebhookRecovery, error) {
	// Microseconds: what both databases store.
	asOf := r.now().UTC().Truncate(time.Microsecond)
	end := asOf
	if until != nil && until.Before(end) {
		end = until.UTC()
	}
	if !since.Before(end) {
		return nil, models.Errorf(models.KindInvalid, "since must be before until and before now")
	}
	ep, err := r.Store.GetEndpoint(ctx, tenantID, endpointID)
	if err != nil {
		return nil, err
	}
	if !ep.Enabled {
		return nil, models.Errorf(models.KindConflict, "the endpoint is disabled; enable it (PATCH enabled true) before recovering its deliveries")
	}
	rec, err := r.create(ctx, ep, since, end, asOf)
	if err != nil {
		return nil, err
	}
	in := RecoveryInput{
		RecoveryID: rec.ID, TenantID: tenantID, EndpointID: ep.ID,
		Since: rec.WindowSince, Until: rec.WindowUntil, AsOf: asOf,
		PageSize: r.PageSize, PageHeartbeat: r.PageHeartbeat, MaxEvents: r.MaxEvents,
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	_, err = r.Starter.ExecuteWorkflow(sctx, client.StartWorkflowOptions{
		ID:                                       rec.WorkflowID,
		TaskQueue:                                cmp.Or(r.TaskQueue, DefaultTaskQueue),
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Priority:                                 temporal.Priority{FairnessKey: tenantID},
		TypedSearchAttributes:                    temporal.NewSearchAttributes(TenantAttr.ValueSet(tenantID), EndpointAttr.ValueSet(ep.ID)),
		StaticSummary: fmt.Sprintf("recovery of %s: deliveries from %s to %s",
			ep.ID, rec.WindowSince.Format(time.RFC3339), rec.WindowUntil.Format(time.RFC3339)),
	}, RecoveryWorkflowName, in)
	if err == nil {
		return rec, nil
	}
	// The cause goes to the caller's log, not into the row, which the API shows.
	const why = "Temporal did not start the recovery's workflow; start another recovery"
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer fcancel()
	if ferr := r.Store.FinishRecovery(fctx, rec.ID, models.RecoveryFailed, models.RecoveryProgress{}, why, r.now()); ferr != nil {
		err = errors.Join(err, ferr)
	}
	var unavailable *serviceerror.Unavailable
	if errors.As(err, &unavailable) || (sctx.Err() != nil && ctx.Err() == nil) {
		return nil, models.Errorf(models.KindUnavailable, "Temporal did not answer; try the recovery again later")
	}
	return nil, fmt.Errorf("start recovery %s: %w", rec.WorkflowID, err)
}
