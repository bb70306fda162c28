package workflows

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
)

// Compatibility: a release keeps running the executions the previous
// release started, and no older ones. Its workers register the workflow
// names, and replay the workflow.GetVersion branches, that the previous
// release's executions may be in; what only older executions took (a
// workflow name, a branch at an older version, their recorded histories
// in testdata) is removed. So 0.4.0 runs what 0.3.x started: deliveries
// as WebhookDelivery, with deferredFirstVersion, and sequencers with
// childTypeVersion at 1; the "Delivery" type, which only releases before
// 0.3.x started, is no longer registered, and an upgrade that skips a
// release lets such executions close on the release that started them.

// The names Temporal knows the delivery workflow and its activity by. They
// are in every history and every running execution, so they are pinned
// here rather than derived from Go identifiers: renaming WebhookDelivery or
// Deliverer.Attempt must not orphan running deliveries. A name stays
// registered, with its code, while executions of it may run (see above); a
// change of a workflow's code that its running executions must not see
// takes a new name (as deliveries did: "WebhookDelivery" after "Delivery")
// or workflow.GetVersion.
const (
	// DeliveryWorkflowName is WebhookDelivery's: every delivery starts as one.
	DeliveryWorkflowName = "WebhookDelivery"
	AttemptActivityName  = "Attempt"
	// SettleDeliveryActivityName is Deliverer.SettleDelivery's, pinned
	// from the start.
	SettleDeliveryActivityName = "SettleDelivery"
	// PurgeWorkflowName and PurgeActivityName are the retention purge's
	// pinned from the start.
	PurgeWorkflowName = "Purge"
	PurgeActivityName = "Purge"
)

// Register registers the delivery workflows and d's Attempt and
// SettleDelivery activities, under their pinned names, with a worker
// polling the deliveries' task queue.
func Register(w worker.Registry, d *activities.Deliverer) {
	registerWorkflows(w)
	w.RegisterActivityWithOptions(d.Attempt, activity.RegisterOptions{Name: AttemptActivityName})
	w.RegisterActivityWithOptions(d.SettleDelivery, activity.RegisterOptions{Name: SettleDeliveryActivityName})
}

// registerWorkflows registers the workflows under their pinned names: the
// worker's registration, which the history replay test shares.
func registerWorkflows(w worker.WorkflowRegistry) {
	w.RegisterWorkflowWithOptions(WebhookDelivery, workflow.RegisterOptions{Name: DeliveryWorkflowName})
	w.RegisterWorkflowWithOptions(Purge, workflow.RegisterOptions{Name: PurgeWorkflowName})
	w.RegisterWorkflowWithOptions(Recovery, workflow.RegisterOptions{Name: RecoveryWorkflowName})
	w.RegisterWorkflowWithOptions(Resync, workflow.RegisterOptions{Name: ResyncWorkflowName})
	w.RegisterWorkflowWithOptions(RecordSequence, workflow.RegisterOptions{Name: RecordSequenceWorkflowName})
}
