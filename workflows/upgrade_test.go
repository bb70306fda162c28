package workflows

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestOlderWorkerRefusesWebhookDelivery: during a rolling upgrade, a
// worker of a release before DeliveryWorkflowName (it knows only
// VersionedDeliveryWorkflowName) that is handed a new delivery's workflow
// task refuses it instead of running it the old way; once a worker of
// this release polls the queue, the delivery runs to its end there, its
// first attempt a local activity, made once.
func TestOlderWorkerRefusesWebhookDelivery(t *testing.T) {
	c := recoveryTemporal(t)
	ctx := t.Context()
	const queue = "upgrade"
	var attempts atomic.Int32
	attempt := func(_ context.Context, in activities.AttemptInput) (activities.AttemptOutput, error) {
		attempts.Add(1)
		return activities.AttemptOutput{DeliveryID: "whd_1", Attempt: 1, StatusCode: 204}, nil
	}
	register := func(r worker.Registry) {
		r.RegisterActivityWithOptions(attempt, activity.RegisterOptions{Name: AttemptActivityName})
	}

	old := worker.New(c, queue, worker.Options{DisableRegistrationAliasing: true})
	old.RegisterWorkflowWithOptions(VersionedDelivery, workflow.RegisterOptions{Name: VersionedDeliveryWorkflowName})
	register(old)
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	in := testInput(5, DefaultRetryPolicy())
	id := WorkflowID(in.EventID, in.EndpointID)
	opts := startOptions(id, queue, in, false)
	// Refused tasks come back after their timeout: short, for the test.
	opts.WorkflowTaskTimeout = time.Second
	run, err := c.ExecuteWorkflow(ctx, opts, DeliveryWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Eventually(t, 30*time.Second, "the older worker's refusal in the history", func() bool {
		for _, e := range history(ctx, t, c, id, run.GetRunID()).GetEvents() {
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED {
				return true
			}
		}
		return false
	})
	old.Stop()
	if n := attempts.Load(); n != 0 {
		t.Fatalf("the older worker made %d attempts, want none", n)
	}

	current := worker.New(c, queue, worker.Options{DisableRegistrationAliasing: true})
	registerWorkflows(current)
	register(current)
	if err := current.Start(); err != nil {
		t.Fatal(err)
	}
	defer current.Stop()
	var out DeliveryOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Succeeded || out.Attempts != 1 || attempts.Load() != 1 {
		t.Errorf("output %+v after %d attempts, want one successful attempt", out, attempts.Load())
	}
	if got := readAttemptEvents(t, history(ctx, t, c, id, run.GetRunID())); len(got.local) != 1 || len(got.scheduled) != 0 {
		t.Errorf("%d local attempts and %d activities in the history, want one local attempt", len(got.local), len(got.scheduled))
	}
}
