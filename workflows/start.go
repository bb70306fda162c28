package workflows

import (
	"cmp"
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// Starter starts workflow executions; client.Client is one.
type Starter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

var _ Starter = client.Client(nil)

// deliveryInput returns the input that delivers ev to ep.
func deliveryInput(ev *models.Event, ep *models.WebhookEndpoint, policy activities.Schedule, replayOf string) (DeliveryInput, error) {
	if !validID(ev.ID) || !validID(ep.ID) {
		return DeliveryInput{}, fmt.Errorf("event id %q or endpoint id %q cannot name a workflow", ev.ID, ep.ID)
	}
	if ev.TenantID != ep.TenantID {
		return DeliveryInput{}, fmt.Errorf("event %s and endpoint %s belong to different tenants", ev.ID, ep.ID)
	}
	return DeliveryInput{
		TenantID: ev.TenantID, EventID: ev.ID, EventType: ev.Type, EndpointID: ep.ID,
		ModuleID: ev.ModuleID, RecordID: ev.RecordID, ReplayOf: replayOf,
		RetryMax: ep.RetryMax, Policy: policy,
	}, nil
}

// startDelivery starts the delivery workflow id with input in on queue
// (DefaultTaskQueue when empty), under the trace of the event ev that
// caused it, and waits startTimeout at most: the one way the dispatcher,
// replays and recoveries start a delivery. timedOut reports that the
// start's own deadline passed while ctx was still live.
func startDelivery(ctx context.Context, s Starter, ev *models.Event, id, queue string, in DeliveryInput, eager bool) (run client.WorkflowRun, timedOut bool, err error) {
	sctx, cancel := context.WithTimeout(ev.TraceContext(ctx), startTimeout)
	defer cancel()
	run, err = s.ExecuteWorkflow(sctx, startOptions(id, cmp.Or(queue, DefaultTaskQueue), in, eager), DeliveryWorkflowName, in)
	return run, err != nil && sctx.Err() != nil && ctx.Err() == nil, err
}

// startOptions are the options that start the delivery workflow id with
// input in on queue. An id that was used already, by a running or a closed
// execution, is refused with *serviceerror.WorkflowExecutionAlreadyStarted:
// a delivery is never started twice. The tenant is the fairness key: on a
// server with task-queue fairness on, one tenant's backlog does not hold up
// another tenant's deliveries (its activities inherit the key). eager asks
// for the first workflow task in the start's answer, for a worker of this
// process; the SDK falls back to the task queue when there is none, or none
// with a free slot.
func startOptions(id, queue string, in DeliveryInput, eager bool) client.StartWorkflowOptions {
	summary := in.EventType + " " + in.EventID + " to " + in.EndpointID
	if in.ReplayOf != "" {
		summary += ", replay of " + in.ReplayOf
	}
	return client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                queue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowTaskTimeout:                      workflowTaskTimeout(in.Policy),
		EnableEagerStart:                         eager,
		Priority:                                 temporal.Priority{FairnessKey: in.TenantID},
		TypedSearchAttributes:                    searchAttributes(in),
		StaticSummary:                            summary,
	}
}
