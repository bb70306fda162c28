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
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/models"
)

// Recoveries and resyncs are both bulk jobs: a workflow that goes through
// an endpoint's work page by page, one activity a page, and records its
// end with a finish activity; a row that an API route starts and reads.
// What they share is written here once. The commands the workflows issue
// are those of the recorded histories (testdata/recovery_*.json,
// resync_*.json): runPages is the loop both ran, command for command.

// pagesPerRun bounds the pages of one workflow run: past it the job
// continues as new, so that its history stays small however large the
// job.
const pagesPerRun = 100

// bulkWorkflowID is the id of an endpoint's n-th job (n ≥ 1) of the kind
// whose ids start with prefix: derived from the job's number, so that the
// workflow of one job is never started twice.
func bulkWorkflowID(prefix, endpointID string, n int) string {
	return prefix + endpointID + "/" + strconv.Itoa(n)
}

// DefaultPageHeartbeat is how long a page may go without a heartbeat
// before Temporal retries it on another worker: a page heartbeats at every
// start it makes.
const DefaultPageHeartbeat = 15 * time.Second

// bulkWorkflow names a bulk workflow and its activities.
type bulkWorkflow struct {
	name, page, finish string
	// stopped is the error type of a page that no retry mends (the
	// endpoint was deleted or disabled).
	stopped string
}

// bulkInput is a bulk workflow's input as runPages uses it (*RecoveryInput,
// *ResyncInput); P is the page activity's output.
type bulkInput[P any] interface {
	// nextPage is the page activity's input for the next page.
	nextPage() any
	// add folds a page's output into the progress and the cursor, and
	// reports whether the page was the last.
	add(page P) (done bool)
	// finished is the finish activity's input that ends the job as status.
	finished(status, why string) any
}

// runPages runs k's page activity page after page, until a page is the
// last, then records the end with k's finish activity. A page that fails
// is retried by Temporal (a worker that dies mid-page included); one that
// keeps failing, or stops the job, fails it, as does a cancellation. After
// pagesPerRun pages it continues as new with in.
func runPages[P any](ctx workflow.Context, k bulkWorkflow, in bulkInput[P], heartbeat time.Duration) error {
	pageCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		// A worker that dies mid-page is noticed within this, not at the
		// end of the page's timeout.
		HeartbeatTimeout: positiveOr(heartbeat, DefaultPageHeartbeat),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 20,
			NonRetryableErrorTypes: []string{k.stopped},
		},
	})
	for pages := 0; ; pages++ {
		if pages == pagesPerRun {
			// in is a pointer: it encodes as the input struct it points to.
			return workflow.NewContinueAsNewError(ctx, k.name, in)
		}
		var page P
		err := workflow.ExecuteActivity(pageCtx, k.page, in.nextPage()).Get(ctx, &page)
		if err != nil {
			why := "canceled"
			if !temporal.IsCanceledError(err) {
				why = failureMessage(err)
			}
			// A canceled workflow still records its end.
			fctx, _ := workflow.NewDisconnectedContext(ctx)
			if ferr := finishBulk(fctx, k, in.finished(models.RecoveryFailed, why)); ferr != nil {
				return errors.Join(err, ferr)
			}
			return err
		}
		if in.add(page) {
			break
		}
	}
	return finishBulk(ctx, k, in.finished(models.RecoveryCompleted, ""))
}

// finishBulk runs k's finish activity, retried until it writes: a job
// must not be left "running".
func finishBulk(ctx workflow.Context, k bulkWorkflow, in any) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	return workflow.ExecuteActivity(ctx, k.finish, in).Get(ctx, nil)
}

// failureMessage is the message of the activity failure behind err, for
// the job's error.
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

// Describer reads a workflow execution's state; client.Client is one.
type Describer interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

var _ Describer = client.Client(nil)

// bulkSettle is how long after its row is written a job's workflow may
// still be being started (Start's own bound, twice over).
const bulkSettle = 2 * startTimeout

// bulkRow is a bulk job's row: *models.WebhookRecovery, *models.WebhookResync.
type bulkRow interface {
	Job() *models.BulkJob
}

// bulkJobs starts and checks the workflows of one kind of bulk job;
// Recoveries and Resyncs each make theirs from their own fields.
type bulkJobs[R bulkRow] struct {
	// kind names the job in messages: "recovery", "resync".
	kind      string
	workflow  string
	starter   Starter
	describer Describer
	taskQueue string
	now       func() time.Time
	// fail marks a running row failed for why, keeping its counts. It is
	// conditional on running: a job that finished meanwhile keeps its end.
	fail func(ctx context.Context, row R, why string) error
	// reload reads a row again.
	reload func(ctx context.Context, row R) (R, error)
	// running is the running row that err, the store's refusal of a new
	// one, names.
	running func(err error) (R, bool)
	// refuse is the refusal that names a running row.
	refuse func(row R) error
}

// check brings a row that says its job is running in line with the job's
// workflow. A workflow that was never started (the process that wrote the
// row stopped before starting it) or that closed without recording its end
// (terminated from the Web UI, say) would leave the row running for ever:
// check marks it failed, saying why, and answers the row read again. A job
// still in its first moments, a running or continued workflow, and a
// Temporal that does not answer (an error) leave row as it is.
func (b bulkJobs[R]) check(ctx context.Context, row R) (R, error) {
	job := row.Job()
	if b.describer == nil || job.Status != models.RecoveryRunning || b.now().Sub(job.StartedAt) < bulkSettle {
		return row, nil
	}
	var why string
	desc, err := b.describer.DescribeWorkflowExecution(ctx, job.WorkflowID, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		why = fmt.Sprintf("the %[1]s's workflow does not exist: the process that was starting it stopped first; start another %[1]s", b.kind)
	case err != nil:
		return row, fmt.Errorf("describe %s %s: %w", b.kind, job.WorkflowID, err)
	default:
		switch st := desc.GetWorkflowExecutionInfo().GetStatus(); st {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
			return row, nil
		default:
			why = fmt.Sprintf("the %s's workflow ended (%s) without recording its end; start another %s", b.kind, strings.ToLower(st.String()), b.kind)
		}
	}
	if err := b.fail(ctx, row, why); err != nil {
		return row, err
	}
	return b.reload(ctx, row)
}

// create records a job with insert. An endpoint with a job of the kind
// running refuses it unless check finds that the running one has nothing
// behind it (its workflow never started or ended without recording it):
// then the stale one is marked failed and the new one recorded, so that a
// lost job does not block its endpoint.
func (b bulkJobs[R]) create(ctx context.Context, insert func() (R, error)) (R, error) {
	var none R
	row, err := insert()
	running, ok := b.running(err)
	if !ok {
		return row, err
	}
	checked, cerr := b.check(ctx, running)
	if cerr != nil {
		// Temporal did not answer: the running one stands.
		return none, err
	}
	if checked.Job().Status == models.RecoveryRunning {
		return none, b.refuse(checked)
	}
	return insert()
}

// start starts the workflow of row, just recorded, with input in. Its id
// is the row's, never reused; summary is what the Web UI shows of it. A
// start that fails marks the row failed; a Temporal that does not answer
// is KindUnavailable.
func (b bulkJobs[R]) start(ctx context.Context, row R, summary string, in any) (R, error) {
	var none R
	job := row.Job()
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	_, err := b.starter.ExecuteWorkflow(sctx, client.StartWorkflowOptions{
		ID:                                       job.WorkflowID,
		TaskQueue:                                cmp.Or(b.taskQueue, DefaultTaskQueue),
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Priority:                                 temporal.Priority{FairnessKey: job.TenantID},
		TypedSearchAttributes:                    temporal.NewSearchAttributes(TenantAttr.ValueSet(job.TenantID), EndpointAttr.ValueSet(job.EndpointID)),
		StaticSummary:                            summary,
	}, b.workflow, in)
	if err == nil {
		return row, nil
	}
	// The cause goes to the caller's log, not into the row, which the API
	// shows.
	why := fmt.Sprintf("Temporal did not start the %s's workflow; start another %s", b.kind, b.kind)
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer fcancel()
	if ferr := b.fail(fctx, row, why); ferr != nil {
		err = errors.Join(err, ferr)
	}
	var unavailable *serviceerror.Unavailable
	if errors.As(err, &unavailable) || (sctx.Err() != nil && ctx.Err() == nil) {
		return none, models.Errorf(models.KindUnavailable, "Temporal did not answer; try the %s again later", b.kind)
	}
	return none, fmt.Errorf("start %s %s: %w", b.kind, job.WorkflowID, err)
}
