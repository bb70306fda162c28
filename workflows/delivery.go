package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// The default delivery schedule, used where the configuration leaves a
// value unset. The values are written once, in activities, which also
// needs them and cannot import this package.
const (
	DefaultRetryInitial     = activities.DefaultRetryInitial
	DefaultRetryMaxInterval = activities.DefaultRetryMaxInterval
	DefaultAttemptTimeout   = activities.DefaultTimeout
	// BackoffCoefficient multiplies each delay between attempts to give the next.
	BackoffCoefficient = activities.BackoffCoefficient
)

// rowMargin is added to the attempt timeout to give the activity's whole
// run, which writes the attempt's row after the request ended, its
// start-to-close timeout: an attempt that timed out still leaves its row.
const rowMargin = 15 * time.Second

// RetryPolicy is the delivery schedule, filled by the starter from the
// configuration (RECORDHUB_WEBHOOK_*) and carried in the workflow input so
// that the workflow reads no configuration and stays deterministic. Zero
// fields take the defaults.
type RetryPolicy struct {
	// Initial is the delay before the second attempt; each next delay is
	// BackoffCoefficient times the previous one.
	Initial time.Duration `json:"initial"`
	// MaxInterval caps the delay between two attempts.
	MaxInterval time.Duration `json:"max_interval"`
	// AttemptTimeout bounds one HTTP attempt, connection to last byte.
	AttemptTimeout time.Duration `json:"attempt_timeout"`
}

// DefaultRetryPolicy returns the default schedule: 60 s doubling up to
// 960 s, 30 s per attempt.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Initial: DefaultRetryInitial, MaxInterval: DefaultRetryMaxInterval, AttemptTimeout: DefaultAttemptTimeout}
}

// withDefaults fills the zero fields, and raises a cap below the initial
// delay, which Temporal refuses, to the initial delay.
func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.Initial <= 0 {
		p.Initial = d.Initial
	}
	if p.MaxInterval <= 0 {
		p.MaxInterval = d.MaxInterval
	}
	if p.MaxInterval < p.Initial {
		p.MaxInterval = p.Initial
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = d.AttemptTimeout
	}
	return p
}

// DeliveryInput is the input of the Delivery workflow: ids and settings
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
	// Policy is the schedule between attempts.
	Policy RetryPolicy `json:"policy"`
}

// DeliveryOutput is the result of a successful Delivery workflow. A
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

// DeliveryFailedErrorType is the error type of a failed Delivery workflow.
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

// activityOptions are the options of the attempt activity: one activity
// attempt per delivery attempt, retried on Temporal's schedule. The attempt
// runs on the workflow's own task queue (no TaskQueue set), whichever
// deployment's queue that is.
func activityOptions(in DeliveryInput) workflow.ActivityOptions {
	p := in.Policy.withDefaults()
	return workflow.ActivityOptions{
		StartToCloseTimeout: p.AttemptTimeout + rowMargin,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        p.Initial,
			BackoffCoefficient:     BackoffCoefficient,
			MaximumInterval:        p.MaxInterval,
			MaximumAttempts:        int32(retryMax(in.RetryMax)),
			NonRetryableErrorTypes: NonRetryableErrorTypes(),
		},
	}
}

func retryMax(n int) int {
	if n < 1 {
		return models.DefaultRetryMax
	}
	return n
}

// Delivery delivers one event to one endpoint: the attempt activity, run
// up to in.RetryMax times on the schedule of in.Policy, each attempt writing
// its webhook_deliveries row.
func Delivery(ctx workflow.Context, in DeliveryInput) (DeliveryOutput, error) {
	ctx = workflow.WithActivityOptions(ctx, activityOptions(in))
	// By its pinned name, with the typed input and output of
	// activities.Deliverer.Attempt.
	var res activities.AttemptOutput
	err := workflow.ExecuteActivity(ctx, AttemptActivityName, activities.AttemptInput{
		TenantID: in.TenantID, EventID: in.EventID, EndpointID: in.EndpointID, ReplayOf: in.ReplayOf,
	}).Get(ctx, &res)
	if err == nil {
		return DeliveryOutput{Attempts: res.Attempt, DeliveryID: res.DeliveryID, StatusCode: res.StatusCode, Succeeded: true}, nil
	}
	if temporal.IsCanceledError(err) {
		return DeliveryOutput{}, err
	}
	out := lastAttempt(in, err)
	// Executions recorded before the settle step replay without it.
	if lostAttempt(err) && workflow.GetVersion(ctx, settleLostVersion, workflow.DefaultVersion, 1) == 1 {
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

// lastAttempt describes the attempt that ended a failed delivery. The
// activity puts its AttemptOutput in its errors' details; an attempt whose
// row could not be written has none, and then only the retry state tells
// how many attempts were made.
func lastAttempt(in DeliveryInput, err error) DeliveryOutput {
	var (
		res    activities.AttemptOutput
		appErr *temporal.ApplicationError
		actErr *temporal.ActivityError
	)
	if errors.As(err, &appErr) && appErr.HasDetails() && appErr.Details(&res) == nil && res.Attempt > 0 {
		return DeliveryOutput{Attempts: res.Attempt, DeliveryID: res.DeliveryID, StatusCode: res.StatusCode, Error: res.Error}
	}
	out := DeliveryOutput{}
	if errors.As(err, &actErr) && actErr.RetryState() == enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED {
		out.Attempts = retryMax(in.RetryMax)
	}
	return out
}

// settleLostVersion is the workflow.GetVersion change id of the settle step.
const settleLostVersion = "settle-lost-attempt"

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
		return false
	}
	cause := actErr.Unwrap()
	if _, ok := cause.(*temporal.TimeoutError); ok {
		return true
	}
	if actErr.RetryState() != enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED {
		return false
	}
	var res activities.AttemptOutput
	appErr, ok := cause.(*temporal.ApplicationError)
	return !ok || !appErr.HasDetails() || appErr.Details(&res) != nil || res.Attempt == 0
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
