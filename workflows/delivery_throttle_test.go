package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
)

// throttledFor answers like the real activity when the endpoint's throttle
// has no slot for attempt n: nothing made, a wait.
func throttledFor(n int, wait time.Duration) (activities.AttemptOutput, error) {
	out := activities.AttemptOutput{Attempt: n}
	return out, temporal.NewApplicationErrorWithOptions("throttled", activities.ErrTypeThrottled, temporal.ApplicationErrorOptions{
		NonRetryable: true, Category: temporal.ApplicationErrorCategoryBenign, NextRetryDelay: wait, Details: []any{out},
	})
}

// throttledCall is one call of the attempt activity in a throttled run.
type throttledCall struct {
	At     time.Duration // from the workflow's start
	N      int           // the delivery attempt number it would make
	Local  bool
	Queued bool // its input's Throttled
	Try    int  // Temporal's attempt number of the activity
}

// runThrottled runs a delivery under time skipping whose attempt activity
// answers play(call number from 0, attempt number).
func runThrottled(t *testing.T, retryMax int, play func(call, n int) (activities.AttemptOutput, error)) ([]throttledCall, DeliveryOutput, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(testLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: testQueue})
	Register(env, &activities.Deliverer{})
	var (
		mu    sync.Mutex
		calls []throttledCall
		start = env.Now()
	)
	env.OnActivity(AttemptActivityName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.AttemptInput) (activities.AttemptOutput, error) {
			info := activity.GetInfo(ctx)
			n := max(in.FirstAttempt, 1) + int(info.Attempt) - 1
			mu.Lock()
			i := len(calls)
			calls = append(calls, throttledCall{At: env.Now().Sub(start), N: n, Local: info.IsLocalActivity, Queued: in.Throttled, Try: int(info.Attempt)})
			mu.Unlock()
			return play(i, n)
		})
	env.OnActivity(SettleDeliveryActivityName, mock.Anything, mock.Anything).Return(nil)
	env.ExecuteWorkflow(DeliveryWorkflowName, testInput(retryMax, activities.DefaultSchedule()))
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var out DeliveryOutput
	err := env.GetWorkflowError()
	if err == nil {
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
	}
	return calls, out, err
}

// TestThrottledLocalAttemptWaits: a local first attempt refused its slot
// waits on a timer for the wait it was given, then the attempt activity
// makes attempt 1, holding its place in the queue.
func TestThrottledLocalAttemptWaits(t *testing.T) {
	calls, out, err := runThrottled(t, 5, func(call, n int) (activities.AttemptOutput, error) {
		if call == 0 {
			return throttledFor(n, 30*time.Second)
		}
		return succeedingAt(1)(n)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []throttledCall{
		{At: 0, N: 1, Local: true, Try: 1},
		{At: 30 * time.Second, N: 1, Queued: true, Try: 1},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(DeliveryOutput{Attempts: 1, DeliveryID: "whd_1", StatusCode: 204, Succeeded: true}, out); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// TestThrottledRetryKeepsItsNumber: a retry refused its slot waits, and
// the attempt made after the wait has the number the refused one would
// have had: waiting uses none of the delivery's attempts, so a delivery
// throttled at its last attempt still makes it.
func TestThrottledRetryKeepsItsNumber(t *testing.T) {
	calls, out, err := runThrottled(t, 3, func(call, n int) (activities.AttemptOutput, error) {
		switch call {
		case 0, 1: // attempts 1 and 2 fail
			return failing(n)
		case 2, 3: // attempt 3, the last, is refused its slot twice
			return throttledFor(n, time.Duration(call)*10*time.Second)
		}
		return succeedingAt(1)(n)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []throttledCall{
		{At: 0, N: 1, Local: true, Try: 1},
		{At: 60 * time.Second, N: 2, Try: 1},
		// Temporal's retry of the activity, on the schedule.
		{At: 180 * time.Second, N: 3, Try: 2},
		// Then the workflow's waits: a fresh activity from attempt 3.
		{At: 200 * time.Second, N: 3, Queued: true, Try: 1},
		{At: 230 * time.Second, N: 3, Queued: true, Try: 1},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(DeliveryOutput{Attempts: 3, DeliveryID: "whd_3", StatusCode: 204, Succeeded: true}, out); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// TestThrottledWaitsBounded: a delivery refused its slot past
// maxThrottleWaits fails instead of growing its history without end.
func TestThrottledWaitsBounded(t *testing.T) {
	calls, _, err := runThrottled(t, 5, func(call, n int) (activities.AttemptOutput, error) {
		return throttledFor(n, time.Second)
	})
	if err == nil {
		t.Fatal("a delivery never given a slot succeeded")
	}
	if got, want := len(calls), maxThrottleWaits+1; got != want {
		t.Errorf("%d calls, want %d (the local attempt and one after each wait)", got, want)
	}
	if last := calls[len(calls)-1]; last.N != 1 {
		t.Errorf("last call made attempt %d, want 1: no attempt was made", last.N)
	}
}
