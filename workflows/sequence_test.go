package workflows

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// sequenceRun is a RecordSequence in the time-skipping suite, with a fake
// Delivery child that takes childTime and fails for the events in fail.
type sequenceRun struct {
	env *testsuite.TestWorkflowEnvironment
	mu  sync.Mutex
	// ran are the children's event ids, in the order they started.
	ran  []string
	fail map[string]bool
}

const childTime = time.Minute

func newSequenceRun(t *testing.T) *sequenceRun {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(testLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: testQueue})
	r := &sequenceRun{env: env, fail: map[string]bool{}}
	env.RegisterWorkflowWithOptions(RecordSequence, workflow.RegisterOptions{Name: RecordSequenceWorkflowName})
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in DeliveryInput) (DeliveryOutput, error) {
		if got, want := workflow.GetInfo(ctx).WorkflowExecution.ID, WorkflowID(in.EventID, in.EndpointID); got != want {
			return DeliveryOutput{}, fmt.Errorf("child id %s, want %s", got, want)
		}
		r.mu.Lock()
		r.ran = append(r.ran, in.EventID)
		fail := r.fail[in.EventID]
		r.mu.Unlock()
		if err := workflow.Sleep(ctx, childTime); err != nil {
			return DeliveryOutput{}, err
		}
		if fail {
			return DeliveryOutput{}, temporal.NewNonRetryableApplicationError("given up", DeliveryFailedErrorType, nil)
		}
		return DeliveryOutput{Succeeded: true, Attempts: 1}, nil
	}, workflow.RegisterOptions{Name: DeliveryWorkflowName})
	return r
}

// item is the sequenced delivery of event id at version v.
func item(id string, v int64) SequencedDelivery {
	return SequencedDelivery{Delivery: DeliveryInput{TenantID: "ten_1", EventID: id, EndpointID: "whe_1", RecordID: "rec_1", EventType: "record_updated"}, RecordVersion: v}
}

// signalAt sends d to the sequencer at offset into the run.
func (r *sequenceRun) signalAt(at time.Duration, d SequencedDelivery) {
	r.env.RegisterDelayedCallback(func() { r.env.SignalWorkflow(SequenceSignalName, d) }, at)
}

func (r *sequenceRun) execute(t *testing.T, queue ...SequencedDelivery) {
	t.Helper()
	r.env.ExecuteWorkflow(RecordSequenceWorkflowName, RecordSequenceInput{TenantID: "ten_1", EndpointID: "whe_1", RecordID: "rec_1", Queue: queue})
	if !r.env.IsWorkflowCompleted() {
		t.Fatal("the sequencer did not end")
	}
}

func (r *sequenceRun) children() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ran)
}

// TestRecordSequenceOrder: deliveries that arrive while one runs go in
// version order (equal versions in arrival order), one at a time, a failed
// one letting the next go; a repeated signal runs nothing twice; the
// sequencer ends when its queue is empty.
func TestRecordSequenceOrder(t *testing.T) {
	r := newSequenceRun(t)
	r.fail["evt_2"] = true
	r.signalAt(time.Second, item("evt_5", 5))
	r.signalAt(2*time.Second, item("evt_2", 2))
	r.signalAt(3*time.Second, item("evt_4a", 4))
	r.signalAt(4*time.Second, item("evt_4b", 4))
	r.signalAt(5*time.Second, item("evt_2", 2)) // repeated
	// Arrives while evt_2 (failing) runs.
	r.signalAt(childTime+time.Second, item("evt_3", 3))
	r.execute(t, item("evt_1", 1))
	if err := r.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{"evt_1", "evt_2", "evt_3", "evt_4a", "evt_4b", "evt_5"}
	if got := r.children(); !slices.Equal(got, want) {
		t.Errorf("children %v, want %v", got, want)
	}
}

// TestRecordSequenceAlreadyStarted: a delivery whose child id was used
// already (it ran before, in this run or another) is refused by Temporal
// and counts as made: the next one goes.
func TestRecordSequenceAlreadyStarted(t *testing.T) {
	r := newSequenceRun(t)
	// evt_1's child closed by then; the signal comes again (a dispatcher
	// that died before it marked the event).
	r.signalAt(childTime+30*time.Second, item("evt_1", 1))
	r.signalAt(childTime+31*time.Second, item("evt_3", 3))
	r.execute(t, item("evt_1", 1), item("evt_2", 2))
	if err := r.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{"evt_1", "evt_2", "evt_3"}
	if got := r.children(); !slices.Equal(got, want) {
		t.Errorf("children %v, want %v", got, want)
	}
}

// TestRecordSequenceContinueAsNew: after sequenceChildLimit children the
// sequencer continues as new with what is queued, the signals that came
// meanwhile included, in order.
func TestRecordSequenceContinueAsNew(t *testing.T) {
	r := newSequenceRun(t)
	var queue []SequencedDelivery
	for i := range sequenceChildLimit + 2 {
		queue = append(queue, item(fmt.Sprintf("evt_%03d", i), int64(i+1)))
	}
	// Arrives while the last child of the run is under way.
	r.signalAt(time.Duration(sequenceChildLimit-1)*childTime+time.Second, item("evt_late", sequenceChildLimit+10))
	r.execute(t, queue...)
	var can *workflow.ContinueAsNewError
	if err := r.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the sequencer ended with %v, want to continue as new", err)
	}
	if got := len(r.children()); got != sequenceChildLimit {
		t.Errorf("%d children before continuing as new, want %d", got, sequenceChildLimit)
	}
	var next RecordSequenceInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, d := range next.Queue {
		left = append(left, d.Delivery.EventID)
	}
	want := []string{fmt.Sprintf("evt_%03d", sequenceChildLimit), fmt.Sprintf("evt_%03d", sequenceChildLimit+1), "evt_late"}
	if !slices.Equal(left, want) || next.EndpointID != "whe_1" || next.RecordID != "rec_1" || next.TenantID != "ten_1" {
		t.Errorf("continued with %+v (queue %v), want the queue %v", next, left, want)
	}
}

// TestRecordSequenceSignalAtEnd: a delivery signalled at the moment the
// last child closes is run, not dropped with the ending run.
func TestRecordSequenceSignalAtEnd(t *testing.T) {
	r := newSequenceRun(t)
	r.signalAt(childTime, item("evt_2", 2))
	r.execute(t, item("evt_1", 1))
	if err := r.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got, want := r.children(), []string{"evt_1", "evt_2"}; !slices.Equal(got, want) {
		t.Errorf("children %v, want %v", got, want)
	}
}
