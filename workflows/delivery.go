package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// rowMargin is added to the attempt timeout to give the activity's whole
// run, which writes the attempt's row after the request ended, its
// start-to-close timeout: an attempt that timed out still leaves its row.
const rowMargin = 15 * time.Second

// DeliveryInput is the input of the delivery workflow (WebhookDelivery): ids and settings
// only, never the payload, which the activity reads from the event row.
// Fields may be added (with a zero value that keeps today's behaviour);
// none may be removed or change meaning while workflows that carry it run.
type DeliveryInput struct {
	TenantID   string `json:"tenant_id"`
	EventID    string `json:"event_id"`
	EventType  string `json:"event_type"`
	EndpointID string `json:"endpoint_id"`
	ModuleID   string `json:"module_id"`
	RecordID   string `json:"record_id"`
	// ReplayOf is the id of the delivery attempt this execution replays;
	// empty for an event's first delivery.
	ReplayOf string `json:"replay_of,omitempty"`
	// RetryMax is the endpoint's retry_max: attempts in all, the first
	// included. Values below 1 mean models.DefaultRetryMax, never
	// "unlimited" as in Temporal.
	RetryMax int `json:"retry_max"`
	// Policy is the schedule between attempts, filled by the starter from
	// the configuration (RECORDHUB_WEBHOOK_*), so that the workflow reads
	// no configuration and stays deterministic. Zero fields take the
	// defaults; its Attempts is left out: RetryMax says it.
	Policy activities.Schedule `json:"policy"`
}

// schedule is the delivery's schedule: the input's policy with its
// defaults, its attempts in all the endpoint's retry_max.
func (in DeliveryInput) schedule() activities.Schedule {
	s := in.Policy.WithDefaults()
	s.Attempts = in.RetryMax
	if s.Attempts < 1 {
		s.Attempts = models.DefaultRetryMax
	}
	return s
}

// DeliveryOutput is the result of a successful delivery workflow. A
// delivery whose attempts are used up, or that is refused for good (a
// blocked destination, a deleted or disabled endpoint), fails the workflow
// with an error of type DeliveryFailedErrorType whose details hold the
// DeliveryOutput of the last attempt, so that the Temporal UI shows
// deliveries that did not arrive as Failed.
type DeliveryOutput struct {
	// Attempts is the number of attempts made, the first included; 0 in
	// the rare failure where it is unknown (see lastAttempt).
	Attempts int `json:"attempts"`
	// DeliveryID is the id of the last attempt's webhook_deliveries row
	// ("" when that row could not be written).
	DeliveryID string `json:"delivery_id"`
	// StatusCode is the HTTP status of the last attempt's response; 0 when
	// there was none.
	StatusCode int `json:"status_code"`
	// Error is the last attempt's delivery error code (models.DeliveryErr*);
	// "" on success.
	Error     string `json:"error,omitempty"`
	Succeeded bool   `json:"succeeded"`
}

// DeliveryFailedErrorType is the error type of a failed delivery workflow.
const DeliveryFailedErrorType = "WebhookDeliveryFailed"

// NonRetryableErrorTypes are the attempt's error types that end a delivery
// at once: waiting will not change them. The activity marks these errors
// non-retryable itself; the policy says so too, so that the schedule can be
// read in one place (and in the Temporal UI).
func NonRetryableErrorTypes() []string {
	return []string{
		activities.ErrTypeBlockedDestination, activities.ErrTypeEndpointGone,
		activities.ErrTypeEndpointDisabled, activities.ErrTypeEventGone,
	}
}

// activityOptions are the options of the attempt activity on schedule s:
// one activity attempt per delivery attempt, retried on Temporal's
// schedule. first is the delivery attempt number of the activity's first
// attempt: 1, or the number after a local first attempt's, when the
// policy continues the delivery's schedule from there, for the attempts
// that are left. The attempt runs on the workflow's own task queue (no
// TaskQueue set), whichever deployment's queue that is.
func activityOptions(s activities.Schedule, first int) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: s.AttemptTimeout + rowMargin,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        s.Delay(first),
			BackoffCoefficient:     activities.BackoffCoefficient,
			MaximumInterval:        s.MaxInterval,
			MaximumAttempts:        int32(s.Attempts - first + 1),
			NonRetryableErrorTypes: NonRetryableErrorTypes(),
		},
	}
}

// localOptions are the options of the first attempt on schedule s, a
// local activity: the same timeout, and no retry of its own; its retry
// policy is the delivery's schedule, which the activity reads to place a
// receiver's Retry-After.
func localOptions(s activities.Schedule) workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: s.AttemptTimeout + rowMargin,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        s.Initial,
			BackoffCoefficient:     activities.BackoffCoefficient,
			MaximumInterval:        s.MaxInterval,
			MaximumAttempts:        1,
			NonRetryableErrorTypes: NonRetryableErrorTypes(),
		},
	}
}

// maxWorkflowTaskTimeout is the longest workflow task timeout Temporal
// takes; a longer one is cut to it.
const maxWorkflowTaskTimeout = 120 * time.Second

// workflowTaskTimeout is the workflow task timeout of a delivery on
// policy (its zero fields the defaults): long enough that the local first
// attempt, which runs inside the workflow task for up to the attempt
// timeout and rowMargin, ends before the task needs a heartbeat (the SDK
// sends one once a local activity has run for 80 % of the task's
// timeout). With Temporal's default of 10 s, every first attempt
// at a receiver that holds the request for most of the 30 s timeout cost
// three heartbeats, each a write to the execution: a thousand such
// receivers overloaded the server, whose writes then timed out, whose
// tasks timed out, and whose attempts ran again. It also keeps a first
// attempt from being run again while it is still in flight: the task can
// time out, and another worker run the attempt again, only after the
// first run's own deadline. The price: a worker that dies holding a
// delivery's workflow task leaves it for this long, not 10 s, before
// another worker takes it.
func workflowTaskTimeout(policy activities.Schedule) time.Duration {
	s := policy.WithDefaults()
	return min((s.AttemptTimeout+rowMargin)*5/4+5*time.Second, maxWorkflowTaskTimeout)
}

// firstWorkflowTaskLength is the history length in an execution's first
// workflow task: started, task scheduled, task started.
const firstWorkflowTaskLength = 3

// WebhookDelivery delivers one event to one endpoint: up to in.RetryMax attempts
// on the schedule of in.Policy, each attempt writing its
// webhook_deliveries row. It is registered as DeliveryWorkflowName, which
// every delivery starts as.
//
// The first attempt runs as a local activity, inside the workflow task
// that starts the execution: most deliveries succeed at once, and then
// the execution costs one workflow task, without the activity's own
// events, timers and second workflow task. The history shows that attempt
// as a marker (its outcome, failure included). A failed first attempt
// that may be retried waits out the schedule's first delay (or the
// receiver's Retry-After) on a durable timer, then the delivery goes on
// with the attempt activity, whose retry policy continues the same
// schedule for the attempts that are left: attempts 2 and later are
// activity attempts, each with its number and failure in the Temporal UI.
//
// An attempt refused a slot by its endpoint's throttle (rate_limit,
// max_in_flight) was not made: the delivery waits on a durable timer for
// the wait the throttle gave it (its turn in the endpoint's queue; the
// Temporal UI shows the timer as "throttled: ..."), then runs the attempt
// activity again from the same attempt number. No attempt, row or retry
// is used by the wait, and no worker slot is held meanwhile.
//
// Its workflow.GetVersion branches are the deferred first attempt's
// (deferredFirstVersion), asked only when a local attempt was deferred,
// and the throttled attempt's (throttledVersion), asked only when an
// attempt was throttled: a new execution is otherwise the same six
// history events as a bare workflow whose one step is a local activity. A change to it that its
// running executions must not see goes behind GetVersion too (see the
// rule in register.go).
//
// No Go function of this package is named after a workflow's pinned
// name other than its own: the SDK also finds a workflow by its
// function's name.
func WebhookDelivery(ctx workflow.Context, in DeliveryInput) (DeliveryOutput, error) {
	s := in.schedule()
	first := 1
	res, err := localAttempt(ctx, in, s)
	// waits counts the delivery's waits for its endpoint's throttle.
	waits := 0
	switch {
	case err == nil:
		return succeeded(res), nil
	case deferred(err) && workflow.GetVersion(ctx, deferredFirstVersion, workflow.DefaultVersion, 1) == 1:
		// Nothing was sent: the first attempt is the activity's first.
	case throttled(err) && throttledVersionOn(ctx):
		// Nothing was sent: the first attempt waits for its slot, then is
		// the activity's first.
		if err := throttleWait(ctx, err, 1); err != nil {
			return DeliveryOutput{}, err
		}
		waits++
	default:
		delay, next, more := following(s, err)
		if !more {
			return failed(ctx, in, s, err, next-1)
		}
		timer := workflow.NewTimerWithOptions(ctx, delay, workflow.TimerOptions{Summary: fmt.Sprintf("until attempt %d", next)})
		if err := timer.Get(ctx, nil); err != nil {
			return DeliveryOutput{}, err
		}
		first = next
	}
	for {
		opts := activityOptions(s, first)
		if first > 1 {
			// What the Temporal UI shows beside the activity: which of the
			// delivery's attempts its own are.
			opts.Summary = fmt.Sprintf("attempts %d to %d", first, s.Attempts)
		}
		actx := workflow.WithActivityOptions(ctx, opts)
		a := attemptInput(in, s, first)
		a.Throttled = waits > 0
		// By its pinned name, with the typed input and output of
		// activities.Deliverer.Attempt.
		var last activities.AttemptOutput
		err = workflow.ExecuteActivity(actx, AttemptActivityName, a).Get(actx, &last)
		if err == nil {
			return succeeded(last), nil
		}
		if !throttled(err) || waits >= maxThrottleWaits || !throttledVersionOn(ctx) {
			return failed(ctx, in, s, err, 0)
		}
		// The attempt was not made: it is made again, with the same
		// number, once its slot comes.
		if res, ok := activities.AttemptOutcome(err); ok && res.Attempt > 0 {
			first = res.Attempt
		}
		if err := throttleWait(ctx, err, first); err != nil {
			return DeliveryOutput{}, err
		}
		waits++
	}
}

// throttledVersion is the workflow.GetVersion change id of an attempt
// throttled by its endpoint (activities.ErrTypeThrottled), which waits
// for its slot and is made again. It is asked only when an attempt answers
// so, which none did before the change, so that executions never
// throttled carry no marker for it.
const throttledVersion = "throttled-attempt"

func throttledVersionOn(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, throttledVersion, workflow.DefaultVersion, 1) == 1
}

// maxThrottleWaits bounds a delivery's waits for its endpoint's throttle,
// and so its history: each wait adds about ten events (a timer, an
// activity, a workflow task), and the throttle places each wait at the
// delivery's turn in the endpoint's queue, so that a delivery waits once
// or twice, not in a loop. Past the bound the delivery fails as its
// throttled attempt's error says, and may be replayed; 1,000 waits keep a
// history under Temporal's 10,240-event warning.
const maxThrottleWaits = 1000

// throttled reports whether an attempt was not made for want of its
// endpoint's throttle slot (activities.ErrTypeThrottled).
func throttled(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeThrottled
}

// throttleWait waits, on a durable timer, the wait a throttled attempt's
// error placed it at: the Temporal UI shows it beside the timer. The
// worker is free meanwhile, for other endpoints' deliveries.
func throttleWait(ctx workflow.Context, err error, attempt int) error {
	var appErr *temporal.ApplicationError
	errors.As(err, &appErr)
	wait := max(appErr.NextRetryDelay(), time.Millisecond)
	timer := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{
		Summary: fmt.Sprintf("throttled: attempt %d waits for the endpoint's slot", attempt),
	})
	return timer.Get(ctx, nil)
}

// attemptInput is the attempt activity's input on schedule s when its
// first attempt is the delivery's attempt number first. From attempt 1,
// the activity's retry policy is the whole delivery's, and says what the
// fields added for a later start would.
func attemptInput(in DeliveryInput, s activities.Schedule, first int) activities.AttemptInput {
	a := activities.AttemptInput{TenantID: in.TenantID, EventID: in.EventID, EndpointID: in.EndpointID, ReplayOf: in.ReplayOf}
	if first > 1 {
		a.FirstAttempt, a.RetryMax = first, s.Attempts
	}
	return a
}

// localAttempt makes the delivery's first attempt as a local activity.
// Run again after its worker was lost, it takes its number from the run's
// rows: the lost attempt may have reached the receiver, and counts. It
// runs again when the workflow task that ran it timed out, and then either
// of two things tells: the history has grown past the first workflow task
// (the task timed out before it completed), or the code is replaying (the
// task was completed by a heartbeat, which the SDK sends while a local
// activity outlasts most of the task's timeout, and a later task timed
// out; the replay then stands at the first task, whose history length is
// the first task's, and only replaying tells). A local attempt whose
// marker is in the history is never run again, whatever this says.
func localAttempt(ctx workflow.Context, in DeliveryInput, s activities.Schedule) (activities.AttemptOutput, error) {
	a := attemptInput(in, s, 1)
	a.RetryMax = s.Attempts
	a.Renumber = workflow.IsReplaying(ctx) || workflow.GetInfo(ctx).GetCurrentHistoryLength() > firstWorkflowTaskLength
	opts := localOptions(s)
	opts.Summary = "attempt 1"
	if a.Renumber {
		opts.Summary = "first attempt, run again after its worker was lost"
	}
	ctx = workflow.WithLocalActivityOptions(ctx, opts)
	var res activities.AttemptOutput
	err := workflow.ExecuteLocalActivity(ctx, AttemptActivityName, a).Get(ctx, &res)
	return res, err
}

// following decides what follows a local first attempt on schedule s that
// failed with err: whether another attempt may follow (more), its delivery
// attempt number (next) and the delay before it: the receiver's
// Retry-After as the activity placed it, else the schedule's delay. A lost
// attempt (a timeout, no outcome) is taken for the first: only a local
// attempt run again after a lost worker is numbered otherwise, and it
// reports its number.
func following(s activities.Schedule, err error) (delay time.Duration, next int, more bool) {
	n := 1
	if res, ok := activities.AttemptOutcome(err); ok {
		n = res.Attempt
	}
	if temporal.IsCanceledError(err) || s.Last(n) {
		return 0, n + 1, false
	}
	var appErr *temporal.ApplicationError
	hasApp := errors.As(err, &appErr)
	if hasApp && final(appErr) {
		return 0, n + 1, false
	}
	delay = s.Delay(n)
	if hasApp && appErr.NextRetryDelay() > 0 {
		delay = appErr.NextRetryDelay()
	}
	return delay, n + 1, true
}

// succeeded is the output of a delivery whose attempt res got through.
func succeeded(res activities.AttemptOutput) DeliveryOutput {
	return DeliveryOutput{Attempts: res.Attempt, DeliveryID: res.DeliveryID, StatusCode: res.StatusCode, Succeeded: true}
}

// failed ends a delivery on schedule s whose last attempt failed with err:
// settled when that attempt was lost, and failed with the DeliveryOutput
// of that attempt in the error's details. made is the number of attempts
// made when err cannot tell it (0: unknown).
func failed(ctx workflow.Context, in DeliveryInput, s activities.Schedule, err error, made int) (DeliveryOutput, error) {
	if temporal.IsCanceledError(err) {
		return DeliveryOutput{}, err
	}
	out := lastAttempt(s, err)
	if out.Attempts == 0 {
		out.Attempts = made
	}
	if lostAttempt(err) {
		settle(ctx, in)
	}
	workflow.GetLogger(ctx).Info("Webhook delivery failed", "EventID", in.EventID, "EndpointID", in.EndpointID,
		"Attempts", out.Attempts, "Error", out.Error)
	msg := fmt.Sprintf("delivery of %s to %s failed", in.EventID, in.EndpointID)
	if out.Attempts > 0 {
		msg += fmt.Sprintf(" after %d attempts", out.Attempts)
	}
	return DeliveryOutput{}, temporal.NewNonRetryableApplicationError(msg, DeliveryFailedErrorType, err, out)
}

// lastAttempt describes the attempt that ended a failed delivery on
// schedule s. The activity puts its AttemptOutput in its errors' details;
// an attempt whose row could not be written has none, and then only the
// retry state tells how many attempts were made: all of s's.
func lastAttempt(s activities.Schedule, err error) DeliveryOutput {
	if res, ok := activities.AttemptOutcome(err); ok {
		return DeliveryOutput{Attempts: res.Attempt, DeliveryID: res.DeliveryID, StatusCode: res.StatusCode, Error: res.Error}
	}
	out := DeliveryOutput{}
	var actErr *temporal.ActivityError
	if errors.As(err, &actErr) && actErr.RetryState() == enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED {
		out.Attempts = s.Attempts
	}
	return out
}

// deferredFirstVersion is the workflow.GetVersion change id of a local
// first attempt deferred to the attempt activity (see deferred). It is
// asked only when a local attempt answers so, which no execution's did
// before the change, so that executions that were never deferred carry
// no marker for it.
const deferredFirstVersion = "deferred-first-attempt"

// deferred reports whether a local first attempt was not made, for the
// attempt activity to make it (activities.ErrTypeAttemptDeferred).
func deferred(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeAttemptDeferred
}

// settleOptions are the settle activity's: a few quick database writes,
// retried a few times.
func settleOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
		},
	}
}

// lostAttempt reports whether the attempt that ended a failed delivery
// left no outcome: it timed out (its worker died or hung), or it failed
// for good without an AttemptOutput of its own. Its row may still be in
// flight, with no later attempt to mark it, and the endpoint's health has
// not counted the delivery. Only the attempt's own failure is read: a
// server puts the previous attempt's failure, details and all, under a
// timeout. A timeout is enough whatever the retry state, since the
// activity's failure reaches the workflow only once it is not retried.
func lostAttempt(err error) bool {
	var actErr *temporal.ActivityError
	if !errors.As(err, &actErr) {
		return lostLocalAttempt(err)
	}
	cause := actErr.Unwrap()
	if _, ok := cause.(*temporal.TimeoutError); ok {
		return true
	}
	if actErr.RetryState() != enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED {
		return false
	}
	if _, ok := cause.(*temporal.ApplicationError); !ok {
		return true
	}
	_, ok := activities.AttemptOutcome(cause)
	return !ok
}

// lostLocalAttempt is lostAttempt for a local first attempt that ended the
// delivery, whose error comes as the activity (or the SDK) returned it,
// without a retry state: lost when it timed out, or when it failed without
// an AttemptOutput while more attempts were allowed by its error, which
// means it was the delivery's last.
func lostLocalAttempt(err error) bool {
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return true
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return true
	}
	if final(appErr) {
		return false
	}
	_, ok := activities.AttemptOutcome(err)
	return !ok
}

// final reports whether an attempt's error ends the delivery whatever
// attempts are left: marked non-retryable, or of a type the retry policy
// names so.
func final(appErr *temporal.ApplicationError) bool {
	return appErr.NonRetryable() || slices.Contains(NonRetryableErrorTypes(), appErr.Type())
}

// settle runs the settle activity for this run: its rows left in flight
// become worker_lost and the failed delivery counts in the endpoint's
// health. Its failure is logged: the delivery has failed either way.
func settle(ctx workflow.Context, in DeliveryInput) {
	run := workflow.GetInfo(ctx).WorkflowExecution
	ctx = workflow.WithActivityOptions(ctx, settleOptions())
	err := workflow.ExecuteActivity(ctx, SettleDeliveryActivityName, activities.SettleInput{
		TenantID: in.TenantID, EventID: in.EventID, EndpointID: in.EndpointID, WorkflowID: run.ID, RunID: run.RunID,
	}).Get(ctx, nil)
	if err != nil {
		workflow.GetLogger(ctx).Warn("Settling a lost webhook attempt failed", "EventID", in.EventID, "EndpointID", in.EndpointID, "Error", err)
	}
}
