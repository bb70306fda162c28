package workflows

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/models"
)

// The names of the per-(endpoint, record) sequencer, pinned like the
// delivery's: they are in every history of it.
const (
	// RecordSequenceWorkflowName is the sequencer workflow's type.
	RecordSequenceWorkflowName = "RecordSequence"
	// SequenceSignalName is the signal that hands the sequencer one
	// delivery (a SequencedDelivery).
	SequenceSignalName = "delivery"
)

// sequenceIDPrefix starts every sequencer's workflow id.
const sequenceIDPrefix = "webhook-sequence/"

// SequenceWorkflowID is the id of the sequencer of a record's deliveries
// to an endpoint: one at a time per pair, started again (the id reused)
// whenever the record has a delivery to make after the last one ended.
func SequenceWorkflowID(endpointID, recordID string) string {
	return sequenceIDPrefix + endpointID + "/" + recordID
}

// sequenceChildLimit is how many deliveries one run of a sequencer makes
// before it continues as new, carrying its queue: a record updated without
// pause keeps its sequencer running, and a history must stay short.
const sequenceChildLimit = 100

// RecordSequenceInput is the input of the RecordSequence workflow. Queue is
// empty when the dispatcher starts it (the first delivery comes as the
// signal of the start) and holds what was left when a run continues as new.
type RecordSequenceInput struct {
	TenantID   string              `json:"tenant_id"`
	EndpointID string              `json:"endpoint_id"`
	RecordID   string              `json:"record_id"`
	Queue      []SequencedDelivery `json:"queue,omitempty"`
}

// SequencedDelivery is one delivery a sequencer makes: the delivery
// workflow's input and the version of the record its event is about.
type SequencedDelivery struct {
	Delivery DeliveryInput `json:"delivery"`
	// RecordVersion orders the deliveries (models.Event.RecordVersion);
	// deliveries of one version go in the order they arrived.
	RecordVersion int64 `json:"record_version"`
}

// RecordSequence delivers one record's events to one endpoint in the order
// of the record's versions, for an endpoint whose ordering is "record".
// The dispatcher hands it each delivery by signal-with-start
// (SequenceSignalName). It keeps them in a queue sorted by (version,
// arrival) and runs each as the same delivery workflow the unordered path
// starts, as a child with the same id (WorkflowID), one at a time: the
// next starts when the previous one closed, delivered or given up. So a
// failing delivery holds back this record's later ones to this endpoint
// only; other records have their own sequencers.
//
// A delivery whose child id was used already (a signal repeated after a
// dispatcher crash, a recovery or the unordered path before a change of
// the endpoint's ordering) is refused by Temporal and counts as made.
// The children are abandoned, not cancelled, when the sequencer ends: a
// delivery under way is never cut off.
//
// When its queue is empty it takes what signals arrived meanwhile and, with
// none, ends; a signal that races the end makes Temporal refuse the
// completion, and the run goes on with it. After sequenceChildLimit
// children it continues as new with its queue. It touches no database,
// clock or randomness.
func RecordSequence(ctx workflow.Context, in RecordSequenceInput) error {
	signals := workflow.GetSignalChannel(ctx, SequenceSignalName)
	queue := slices.Clone(in.Queue)
	add := func(d SequencedDelivery) {
		id := WorkflowID(d.Delivery.EventID, d.Delivery.EndpointID)
		for _, q := range queue {
			if WorkflowID(q.Delivery.EventID, q.Delivery.EndpointID) == id {
				return // a repeated signal: the delivery is queued already
			}
		}
		// After every delivery of a version up to this one's: equal
		// versions keep their arrival order.
		i, _ := slices.BinarySearchFunc(queue, d.RecordVersion+1, func(q SequencedDelivery, v int64) int {
			return cmp.Compare(q.RecordVersion, v)
		})
		queue = slices.Insert(queue, i, d)
	}
	drain := func() {
		for {
			var d SequencedDelivery
			if !signals.ReceiveAsync(&d) {
				return
			}
			add(d)
		}
	}
	for done := 0; ; done++ {
		drain()
		if len(queue) == 0 {
			return nil
		}
		if done == sequenceChildLimit {
			return workflow.NewContinueAsNewError(ctx, RecordSequenceWorkflowName, RecordSequenceInput{
				TenantID: in.TenantID, EndpointID: in.EndpointID, RecordID: in.RecordID, Queue: queue,
			})
		}
		next := queue[0]
		queue = queue[1:]
		if err := runSequenced(ctx, next); err != nil {
			return err
		}
	}
}

// runSequenced runs one delivery as a child and waits for it to close. It
// returns an error only when the sequencer itself is cancelled: a failed
// delivery (given up, refused) lets the next one go, and a child id used
// already counts as delivered.
func runSequenced(ctx workflow.Context, d SequencedDelivery) error {
	in := d.Delivery
	cctx := workflow.WithChildOptions(ctx, childOptions(in))
	err := workflow.ExecuteChildWorkflow(cctx, childWorkflowType(ctx), in).Get(ctx, nil)
	switch {
	case err == nil, temporal.IsWorkflowExecutionAlreadyStartedError(err):
		return nil
	case ctx.Err() != nil:
		return err
	}
	workflow.GetLogger(ctx).Info("sequenced delivery ended without success; the next one goes",
		"event_id", in.EventID, "endpoint_id", in.EndpointID, "error", err)
	return nil
}

// childTypeVersion is the workflow.GetVersion change id of the sequenced
// deliveries started as DeliveryWorkflowName. Every sequencer run since
// the previous release records its marker at version 1; the runs at
// workflow.DefaultVersion, which started their children under an older
// workflow type, predate it and are no longer supported (see the rule in
// register.go).
const childTypeVersion = "webhook-delivery-child"

// childWorkflowType is the workflow type a sequenced delivery starts as.
// The version is still asked, though it can only be 1: a new run records
// its marker, as the previous release's runs did, so that a history of
// either release replays on the other; asked once per run.
func childWorkflowType(ctx workflow.Context) string {
	workflow.GetVersion(ctx, childTypeVersion, 1, 1)
	return DeliveryWorkflowName
}

// childOptions are the options of a sequenced delivery: those of
// startOptions, as a child of the sequencer that outlives it, on the
// sequencer's task queue.
func childOptions(in DeliveryInput) workflow.ChildWorkflowOptions {
	o := startOptions(WorkflowID(in.EventID, in.EndpointID), "", in, false)
	return workflow.ChildWorkflowOptions{
		WorkflowID:            o.ID,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: o.TypedSearchAttributes,
		StaticSummary:         o.StaticSummary,
		Priority:              o.Priority,
		WorkflowTaskTimeout:   o.WorkflowTaskTimeout,
	}
}

// SignalStarter signals a workflow, starting it when it does not run;
// client.Client is one. The dispatcher and resyncs need it for endpoints
// whose ordering is "record".
type SignalStarter interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
}

var _ SignalStarter = client.Client(nil)

// signalSequence hands the delivery in of ev to the sequencer of its record
// and endpoint, starting the sequencer on queue (DefaultTaskQueue when
// empty) if none runs, under ev's trace, waiting timeout at most. A
// successful signal counts as the delivery's start: the sequencer runs it
// in its turn.
func signalSequence(ctx context.Context, s Starter, ev *models.Event, queue string, in DeliveryInput, timeout time.Duration) error {
	ss, ok := s.(SignalStarter)
	if !ok {
		return fmt.Errorf("the starter %T cannot signal-with-start, which ordering per record needs", s)
	}
	if !validID(in.RecordID) {
		return fmt.Errorf("record id %q cannot name a sequencer", in.RecordID)
	}
	queue = cmp.Or(queue, DefaultTaskQueue)
	id := SequenceWorkflowID(in.EndpointID, in.RecordID)
	opts := client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             queue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Priority:              temporal.Priority{FairnessKey: in.TenantID},
		TypedSearchAttributes: searchAttributes(DeliveryInput{TenantID: in.TenantID, EndpointID: in.EndpointID, ModuleID: in.ModuleID, RecordID: in.RecordID}),
		StaticSummary:         "record " + in.RecordID + " to " + in.EndpointID + " in version order",
	}
	sctx, cancel := context.WithTimeout(ev.TraceContext(ctx), timeout)
	defer cancel()
	_, err := ss.SignalWithStartWorkflow(sctx, id, SequenceSignalName,
		SequencedDelivery{Delivery: in, RecordVersion: ev.RecordVersion},
		opts, RecordSequenceWorkflowName, RecordSequenceInput{TenantID: in.TenantID, EndpointID: in.EndpointID, RecordID: in.RecordID})
	if err != nil {
		return fmt.Errorf("signal sequencer %s: %w", id, err)
	}
	return nil
}
