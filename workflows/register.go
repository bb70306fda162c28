package workflows

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
)

// The names Temporal knows the delivery workflow and its activity by. They
// are in every history and every running execution, so they are pinned
// here rather than derived from Go identifiers: renaming WebhookDelivery or
// Deliverer.Attempt must not orphan running deliveries. A name stays
// registered, with its code, while executions of it may run; a change of a
// workflow's code that its running executions must not see takes a new
// name (as deliveries did: "WebhookDelivery" after "Delivery") or
// workflow.GetVersion.
const (
	// DeliveryWorkflowName is WebhookDelivery's: every delivery starts as one.
	DeliveryWorkflowName = "WebhookDelivery"
	// VersionedDeliveryWorkflowName is VersionedDelivery's, the name
	// deliveries started under before DeliveryWorkflowName: registered
	// so that those executions, and those a worker or API replica of that
	// release starts during a rolling upgrade, run to their end.
	VersionedDeliveryWorkflowName = "Delivery"
	AttemptActivityName           = "Attempt"
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
	w.RegisterWorkflowWithOptions(VersionedDelivery, workflow.RegisterOptions{Name: VersionedDeliveryWorkflowName})
	w.RegisterWorkflowWithOptions(Purge, workflow.RegisterOptions{Name: PurgeWorkflowName})
	w.RegisterWorkflowWithOptions(Recovery, workflow.RegisterOptions{Name: RecoveryWorkflowName})
	w.RegisterWorkflowWithOptions(Resync, workflow.RegisterOptions{Name: ResyncWorkflowName})
	w.RegisterWorkflowWithOptions(RecordSequence, workflow.RegisterOptions{Name: RecordSequenceWorkflowName})
}
