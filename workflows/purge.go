package workflows

import (
	"context"
	"errors"
	"fmt"
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

// The retention purge runs as the Purge workflow, started every
// hour by the Temporal Schedule PurgeScheduleIDFor(task queue), which worker processes
// create (or bring up to date) when they start.
const (
	PurgeScheduleID = "recordhub-purge"
	// PurgeInterval is how often the schedule starts a purge.
	PurgeInterval = time.Hour
)

// PurgeWorkflowInput is the Purge workflow's input. It is empty: every
// kind is purged, and the retention is each worker's configuration.
type PurgeWorkflowInput struct{}

// PurgeWorkflowOutput is what a purge did, one entry per kind.
type PurgeWorkflowOutput struct {
	Kinds []activities.PurgeOutput `json:"kinds"`
}

// purgeActivityTimeout bounds one kind's activity: its budget and a last
// batch.
const purgeActivityTimeout = activities.MaxPurgeBudget + 5*time.Minute

// Purge purges each kind of row in turn with the Purge activity. A kind
// whose purge fails does not keep the others from theirs; the workflow
// then fails, naming it, and the next run tries again.
func Purge(ctx workflow.Context, _ PurgeWorkflowInput) (PurgeWorkflowOutput, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: purgeActivityTimeout,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 10 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 3,
		},
	})
	var (
		out  PurgeWorkflowOutput
		errs []error
	)
	kinds := purgeKindsV0
	if workflow.GetVersion(ctx, purgeIdempotencyVersion, workflow.DefaultVersion, 1) == 1 {
		kinds = append(kinds[:len(kinds):len(kinds)], models.PurgeIdempotencyKeys)
	}
	for _, kind := range kinds {
		var got activities.PurgeOutput
		if err := workflow.ExecuteActivity(ctx, PurgeActivityName, activities.PurgeInput{Kind: kind}).Get(ctx, &got); err != nil {
			errs = append(errs, fmt.Errorf("purge %s: %w", kind, err))
			continue
		}
		out.Kinds = append(out.Kinds, got)
	}
	return out, errors.Join(errs...)
}

// purgeKindsV0 are the kinds every Purge execution purges, in the order
// it purges them: the workflow's own list, not models.PurgeKinds, so that
// a kind added there changes no history. A kind added since comes after
// them behind a version of its own.
var purgeKindsV0 = []models.PurgeKind{models.PurgeAccessLogs, models.PurgeDeliveries, models.PurgeEvents, models.PurgeInboundEvents}

// purgeIdempotencyVersion is the workflow.GetVersion change id of the
// purge of idempotency keys, after the kinds of purgeKindsV0: executions
// that began before it replay without it.
const purgeIdempotencyVersion = "purge-idempotency-keys"

// RegisterPurge registers p's Purge activity under its pinned name (the
// Purge workflow is registered with the others by Register).
func RegisterPurge(w worker.ActivityRegistry, p *activities.Purger) {
	w.RegisterActivityWithOptions(p.Purge, activity.RegisterOptions{Name: PurgeActivityName})
}

// PurgeScheduleIDFor is the id of the purge schedule of the deployment
// whose deliveries run on taskQueue: PurgeScheduleID for the default queue,
// else suffixed with the queue, so that deployments sharing a namespace
// (each with its own queue and database) each keep a schedule of their own.
func PurgeScheduleIDFor(taskQueue string) string {
	if taskQueue == "" || taskQueue == DefaultTaskQueue {
		return PurgeScheduleID
	}
	return PurgeScheduleID + "-" + taskQueue
}

// EnsurePurgeSchedule creates the hourly purge schedule, starting Purge
// on taskQueue, or brings an existing one to that spec and action; with
// enabled false (every retention is zero) it deletes the schedule instead.
func EnsurePurgeSchedule(ctx context.Context, c client.ScheduleClient, taskQueue string, enabled bool) error {
	id := PurgeScheduleIDFor(taskQueue)
	h := c.GetHandle(ctx, id)
	if !enabled {
		if err := h.Delete(ctx); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete schedule %s: %w", id, err)
		}
		return nil
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: PurgeInterval}}}
	action := &client.ScheduleWorkflowAction{
		ID: id, Workflow: PurgeWorkflowName, Args: []any{PurgeWorkflowInput{}}, TaskQueue: taskQueue,
		WorkflowExecutionTimeout: 4 * purgeActivityTimeout,
	}
	_, err := c.Create(ctx, client.ScheduleOptions{
		ID: id, Spec: spec, Action: action,
		// A purge still running when the next is due lets it go; after an
		// outage one run catches up, not one per missed hour.
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, CatchupWindow: PurgeInterval,
		Note: "recordhub retention purge (RECORDHUB_RETENTION*)",
	})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		if err != nil {
			return fmt.Errorf("create schedule %s: %w", id, err)
		}
		return nil
	}
	err = h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec, s.Action = &spec, action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap, s.Policy.CatchupWindow = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, PurgeInterval
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", id, err)
	}
	return nil
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
