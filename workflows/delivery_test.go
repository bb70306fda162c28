package workflows

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
)

// rowLost fails without details, as when the attempt's row could not be written.
func rowLost(int) (activities.AttemptOutput, error) {
	return activities.AttemptOutput{}, temporal.NewApplicationError("record delivery attempt: database is down", activities.ErrTypeStore)
}

// runDelivery runs the Delivery workflow with in, registered as the worker
// registers it, the real activity's Attempt replaced by attempt.
// testQueue is a deployment's own task queue, not the default one.
const testQueue = "recordhub-webhooks-test"

func runDelivery(t *testing.T, in DeliveryInput, attempt attemptFunc) run {
	t.Helper()
	return runDeliverySettling(t, in, attempt, nil)
}

// runDeliverySettling is runDelivery whose settle activity answers
// settleErr. The attempt function gets the delivery attempt number the
// activity would give the attempt, from its input and Temporal's attempt
// number.
func runDeliverySettling(t *testing.T, in DeliveryInput, attempt attemptFunc, settleErr error) run {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(testLogger(t))
	env := s.NewTestWorkflowEnvironment()
	// The SDK ends a workflow task that runs over 1 s as a deadlock; on a
	// loaded 2-core CI machine a test's goroutine can wait that long.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: testQueue})
	Register(env, &activities.Deliverer{})
	var (
		r     run
		mu    sync.Mutex
		start = env.Now()
	)
	env.OnActivity(AttemptActivityName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, got activities.AttemptInput) (activities.AttemptOutput, error) {
			info := activity.GetInfo(ctx)
			mu.Lock()
			prev := 0
			if len(r.numbers) > 0 {
				prev = r.numbers[len(r.numbers)-1]
			}
			n := max(got.FirstAttempt, 1) + int(info.Attempt) - 1
			r.starts = append(r.starts, env.Now().Sub(start))
			r.numbers = append(r.numbers, n)
			r.local = append(r.local, info.IsLocalActivity)
			r.infos = append(r.infos, info)
			mu.Unlock()
			// The input names the delivery; a local first attempt carries
			// the delivery's retry_max, and the activity after it starts
			// at the next number.
			want := activities.AttemptInput{TenantID: in.TenantID, EventID: in.EventID, EndpointID: in.EndpointID, ReplayOf: in.ReplayOf}
			if info.IsLocalActivity {
				want.RetryMax = in.schedule().Attempts
			} else {
				want.FirstAttempt, want.RetryMax = got.FirstAttempt, in.schedule().Attempts
				if info.Attempt == 1 && got.FirstAttempt != prev+1 {
					t.Errorf("activity's FirstAttempt %d after attempt %d", got.FirstAttempt, prev)
				}
			}
			if got != want {
				t.Errorf("activity input %+v, want %+v", got, want)
			}
			return attempt(n)
		})
	env.OnActivity(SettleDeliveryActivityName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, got activities.SettleInput) error {
			mu.Lock()
			defer mu.Unlock()
			r.settles = append(r.settles, got)
			return settleErr
		})
	env.ExecuteWorkflow(DeliveryWorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if r.err = env.GetWorkflowError(); r.err == nil {
		if err := env.GetWorkflowResult(&r.out); err != nil {
			t.Fatal(err)
		}
		return r
	}
	var appErr *temporal.ApplicationError
	if !errors.As(r.err, &appErr) || appErr.Type() != DeliveryFailedErrorType {
		t.Fatalf("workflow error %v, want an application error of type %s", r.err, DeliveryFailedErrorType)
	}
	if err := appErr.Details(&r.failure); err != nil {
		t.Fatalf("details of %v: %v", r.err, err)
	}
	return r
}

func testInput(retryMax int, p activities.Schedule) DeliveryInput {
	return DeliveryInput{
		TenantID: "ten_1", EventID: "evt_1", EventType: "record_created", EndpointID: "whe_1",
		ModuleID: "mod_1", RecordID: "rec_1", RetryMax: retryMax, Policy: p,
	}
}

// TestDeliverySchedule observes the retry schedule under time
// skipping: attempts at 0, 60, 180, 420, 900 s for the default retry_max 5,
// later gaps capped at 960 s, and the schedule of the configuration when it
// sets one.
func TestDeliverySchedule(t *testing.T) {
	for _, c := range []struct {
		name     string
		retryMax int
		policy   activities.Schedule
		attempt  attemptFunc
		want     []time.Duration
		// wantOut is the result, or the failure's details.
		wantOut DeliveryOutput
	}{
		{
			name: "retry_max 5 fails after five attempts", retryMax: 5, policy: activities.DefaultSchedule(), attempt: failing,
			want:    seconds(0, 60, 180, 420, 900),
			wantOut: DeliveryOutput{Attempts: 5, DeliveryID: "whd_5", StatusCode: 500, Error: "http_status"},
		},
		{
			name: "retry_max 8 goes on every 960 s", retryMax: 8, policy: activities.DefaultSchedule(), attempt: failing,
			want:    seconds(0, 60, 180, 420, 900, 1860, 2820, 3780),
			wantOut: DeliveryOutput{Attempts: 8, DeliveryID: "whd_8", StatusCode: 500, Error: "http_status"},
		},
		{
			name: "retry_max 1 makes one attempt", retryMax: 1, policy: activities.DefaultSchedule(), attempt: failing,
			want:    seconds(0),
			wantOut: DeliveryOutput{Attempts: 1, DeliveryID: "whd_1", StatusCode: 500, Error: "http_status"},
		},
		{
			name: "success on the third attempt stops there", retryMax: 5, policy: activities.DefaultSchedule(), attempt: succeedingAt(3),
			want:    seconds(0, 60, 180),
			wantOut: DeliveryOutput{Attempts: 3, DeliveryID: "whd_3", StatusCode: 204, Succeeded: true},
		},
		{
			name: "success at once", retryMax: 5, policy: activities.DefaultSchedule(), attempt: succeedingAt(1),
			want:    seconds(0),
			wantOut: DeliveryOutput{Attempts: 1, DeliveryID: "whd_1", StatusCode: 204, Succeeded: true},
		},
		{
			name: "a zero policy is the default one", retryMax: 3, policy: activities.Schedule{}, attempt: failing,
			want:    seconds(0, 60, 180),
			wantOut: DeliveryOutput{Attempts: 3, DeliveryID: "whd_3", StatusCode: 500, Error: "http_status"},
		},
		{
			name: "retry_max 0 is the default 5, not unlimited", retryMax: 0, policy: activities.DefaultSchedule(), attempt: failing,
			want:    seconds(0, 60, 180, 420, 900),
			wantOut: DeliveryOutput{Attempts: 5, DeliveryID: "whd_5", StatusCode: 500, Error: "http_status"},
		},
		{
			name: "the configured schedule", retryMax: 6, policy: activities.Schedule{Initial: 10 * time.Second, MaxInterval: 40 * time.Second, AttemptTimeout: 5 * time.Second}, attempt: failing,
			want:    seconds(0, 10, 30, 70, 110, 150),
			wantOut: DeliveryOutput{Attempts: 6, DeliveryID: "whd_6", StatusCode: 500, Error: "http_status"},
		},
		{
			// The test environment reports no retry state, so the number of
			// attempts is unknown here; TestLastAttempt covers a server's.
			name: "attempts whose rows were lost are retried", retryMax: 2, policy: activities.DefaultSchedule(), attempt: rowLost,
			want:    seconds(0, 60),
			wantOut: DeliveryOutput{},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runDelivery(t, testInput(c.retryMax, c.policy), c.attempt)
			if diff := cmp.Diff(c.want, r.starts); diff != "" {
				t.Errorf("attempt start times (-want +got):\n%s", diff)
			}
			got := r.out
			if r.err != nil {
				got = r.failure
			}
			if diff := cmp.Diff(c.wantOut, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if c.wantOut.Succeeded != (r.err == nil) {
				t.Errorf("workflow error %v, want success %v", r.err, c.wantOut.Succeeded)
			}
			// Numbered 1, 2, 3…; with the local first attempt, the first
			// is local and the others are the activity's attempts 1, 2…
			var wantNumbers []int
			var wantLocal []bool
			for i := range r.starts {
				wantNumbers = append(wantNumbers, i+1)
				wantLocal = append(wantLocal, i == 0)
			}
			if diff := cmp.Diff(wantNumbers, r.numbers); diff != "" {
				t.Errorf("attempt numbers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantLocal, r.local); diff != "" {
				t.Errorf("local attempts (-want +got):\n%s", diff)
			}
			for i, info := range r.infos {
				want := i + 1
				if i > 0 {
					want = i
				}
				if int(info.Attempt) != want {
					t.Errorf("start %d has Temporal attempt %d, want %d", i+1, info.Attempt, want)
				}
			}
			if len(r.settles) != 0 {
				t.Errorf("settle activity called %d times, want none: every attempt recorded its outcome", len(r.settles))
			}
		})
	}
}

// lostAt fails with the receiver's 500 until attempt k, which times out as
// a server reports it when the worker died: a StartToClose timeout whose
// cause is the previous attempt's failure.
func lostAt(k int) attemptFunc {
	return func(n int) (activities.AttemptOutput, error) {
		if n < k {
			return failing(n)
		}
		var prev error
		if n > 1 {
			_, prev = failing(n - 1)
		}
		return activities.AttemptOutput{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, prev)
	}
}

// TestDeliverySettlesLostAttempt: a delivery whose last attempt timed out
// runs the settle activity once, with the run's ids, and fails as before,
// whether settling works or not. Deliveries whose attempts all recorded
// their outcome never settle (see TestDeliverySchedule).
func TestDeliverySettlesLostAttempt(t *testing.T) {
	for _, c := range []struct {
		name      string
		retryMax  int
		settleErr error
	}{
		{"last of three attempts lost", 3, nil},
		{"the only attempt lost", 1, nil},
		{"settling fails", 3, temporal.NewApplicationError("database is down", activities.ErrTypeStore)},
	} {
		t.Run(c.name, func(t *testing.T) { testSettlesLost(t, c.retryMax, c.settleErr) })
	}

	// Settling failed or not, the delivery fails the same way.
	in := testInput(3, activities.DefaultSchedule())
	ok := runDeliverySettling(t, in, lostAt(3), nil)
	bad := runDeliverySettling(t, in, lostAt(3), temporal.NewApplicationError("database is down", activities.ErrTypeStore))
	if diff := cmp.Diff(ok.failure, bad.failure); diff != "" || ok.err.Error() != bad.err.Error() {
		t.Errorf("failure when settling fails: %v, %+v; when it works: %v, %+v", bad.err, bad.failure, ok.err, ok.failure)
	}
}

// testSettlesLost runs a delivery whose last of retryMax attempts is lost,
// the settle activity answering settleErr.
func testSettlesLost(t *testing.T, retryMax int, settleErr error) {
	in := testInput(retryMax, activities.DefaultSchedule())
	r := runDeliverySettling(t, in, lostAt(retryMax), settleErr)
	if r.err == nil {
		t.Fatal("delivery succeeded")
	}
	if len(r.starts) != retryMax {
		t.Errorf("%d attempts, want %d", len(r.starts), retryMax)
	}
	// The attempts' infos name the run their rows carry.
	run := r.infos[0].WorkflowExecution
	settled := activities.SettleInput{TenantID: in.TenantID, EventID: in.EventID, EndpointID: in.EndpointID, WorkflowID: run.ID, RunID: run.RunID}
	want := []activities.SettleInput{settled}
	if settleErr != nil { // retried on its own policy, then given up
		want = slices.Repeat(want, int(settleOptions().RetryPolicy.MaximumAttempts))
	}
	if diff := cmp.Diff(want, r.settles); diff != "" {
		t.Errorf("settle calls (-want +got):\n%s", diff)
	}
	if run.ID == "" || run.RunID == "" {
		t.Errorf("run %+v: want its ids", run)
	}
}

// TestDeliveryNonRetryable: a blocked destination, a deleted or disabled
// endpoint and a vanished event end the delivery after one attempt, even
// when the activity's error does not say so itself.
func TestDeliveryNonRetryable(t *testing.T) {
	for _, typ := range NonRetryableErrorTypes() {
		t.Run(typ, func(t *testing.T) {
			r := runDelivery(t, testInput(5, activities.DefaultSchedule()), refusing(typ))
			if diff := cmp.Diff(seconds(0), r.starts); diff != "" {
				t.Errorf("attempt start times (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(DeliveryOutput{Attempts: 1, DeliveryID: "whd_1", Error: typ}, r.failure); diff != "" {
				t.Errorf("failure details (-want +got):\n%s", diff)
			}
		})
	}
	if !slices.Contains(NonRetryableErrorTypes(), activities.ErrTypeBlockedDestination) {
		t.Error("a blocked destination must not be retried")
	}
}

// TestDeliveryActivityOptions: each attempt may run its whole timeout and
// still write its row before Temporal gives up on it.
func TestDeliveryActivityOptions(t *testing.T) {
	for _, p := range []activities.Schedule{activities.DefaultSchedule(), {AttemptTimeout: 5 * time.Second}, {}} {
		in := testInput(5, p)
		o := activityOptions(in.schedule(), 1)
		if lo := localOptions(in.schedule()); lo.StartToCloseTimeout != o.StartToCloseTimeout || lo.ScheduleToCloseTimeout != 0 {
			t.Errorf("policy %+v: local attempt's options %+v, want the activity's timeout, %s", p, lo, o.StartToCloseTimeout)
		}
		timeout := p.WithDefaults().AttemptTimeout
		if o.StartToCloseTimeout < timeout+10*time.Second {
			t.Errorf("policy %+v: StartToCloseTimeout %s leaves less than 10 s beyond the attempt timeout %s for the row", p, o.StartToCloseTimeout, timeout)
		}
		if o.StartToCloseTimeout > timeout+time.Minute {
			t.Errorf("policy %+v: StartToCloseTimeout %s: a lost worker's attempt would wait too long", p, o.StartToCloseTimeout)
		}
		if o.TaskQueue != "" || o.ScheduleToCloseTimeout != 0 || o.ScheduleToStartTimeout != 0 {
			t.Errorf("policy %+v: options %+v", p, o)
		}
	}
	want := &temporal.RetryPolicy{
		InitialInterval: 60 * time.Second, BackoffCoefficient: 2, MaximumInterval: 960 * time.Second, MaximumAttempts: 7,
		NonRetryableErrorTypes: []string{activities.ErrTypeBlockedDestination, activities.ErrTypeEndpointGone, activities.ErrTypeEndpointDisabled, activities.ErrTypeEventGone},
	}
	if diff := cmp.Diff(want, activityOptions(testInput(7, activities.DefaultSchedule()).schedule(), 1).RetryPolicy); diff != "" {
		t.Errorf("retry policy (-want +got):\n%s", diff)
	}
	// After a local first attempt, the policy continues the schedule for
	// the attempts left: 120, 240, 480, 960, 960 s between attempts 2..7.
	after := *want
	after.InitialInterval, after.MaximumAttempts = 120*time.Second, 6
	if diff := cmp.Diff(&after, activityOptions(testInput(7, activities.DefaultSchedule()).schedule(), 2).RetryPolicy); diff != "" {
		t.Errorf("retry policy after the local attempt (-want +got):\n%s", diff)
	}
	late := *want
	late.InitialInterval, late.MaximumAttempts = 960*time.Second, 2
	if diff := cmp.Diff(&late, activityOptions(testInput(7, activities.DefaultSchedule()).schedule(), 6).RetryPolicy); diff != "" {
		t.Errorf("retry policy from attempt 6 (-want +got):\n%s", diff)
	}
	// The local attempt's: no retry of its own, the delivery's schedule.
	local := *want
	local.MaximumAttempts = 1
	if diff := cmp.Diff(&local, localOptions(testInput(7, activities.DefaultSchedule()).schedule()).RetryPolicy); diff != "" {
		t.Errorf("local attempt's retry policy (-want +got):\n%s", diff)
	}
	// The activity reads the schedule back from its policy, by Temporal's
	// attempt number, to place a Retry-After: the same delays and last
	// attempt as the delivery's, wherever its first attempt stands.
	for _, s := range []activities.Schedule{testInput(7, activities.DefaultSchedule()).schedule(),
		testInput(9, activities.Schedule{Initial: 10 * time.Second, MaxInterval: 50 * time.Second}).schedule()} {
		for first := 1; first <= s.Attempts; first++ {
			p := activityOptions(s, first).RetryPolicy
			read := activities.Schedule{Initial: p.InitialInterval, MaxInterval: p.MaximumInterval, Attempts: int(p.MaximumAttempts)}
			for try := 1; first+try-1 <= s.Attempts; try++ {
				n := first + try - 1
				if read.Delay(try) != s.Delay(n) || read.Last(try) != s.Last(n) {
					t.Errorf("schedule %+v from attempt %d, its try %d: delay %s, last %v; the delivery's attempt %d: %s, %v",
						s, first, try, read.Delay(try), read.Last(try), n, s.Delay(n), s.Last(n))
				}
			}
		}
	}

	// What the activity sees.
	r := runDelivery(t, testInput(5, activities.DefaultSchedule()), succeedingAt(1))
	if len(r.infos) != 1 {
		t.Fatalf("%d attempts", len(r.infos))
	}
	if got, want := r.infos[0].StartToCloseTimeout, activities.DefaultTimeout+rowMargin; got != want {
		t.Errorf("activity's StartToCloseTimeout %s, want %s", got, want)
	}
	// The workflow's own queue, whatever RECORDHUB_TEMPORAL_TASK_QUEUE is.
	if got := r.infos[0].TaskQueue; got != testQueue {
		t.Errorf("activity's task queue %q, want the workflow's, %q", got, testQueue)
	}
}

// TestLastAttempt: a failed delivery reports its last attempt from the
// activity's error details, and without them (the row was not written) the
// number of attempts from the retry state a server reports.
func TestLastAttempt(t *testing.T) {
	fc := temporal.GetDefaultFailureConverter()
	activityFailure := func(state enumspb.RetryState, cause error) error {
		return fc.FailureToError(&failurepb.Failure{
			Message: "activity error",
			Cause:   fc.ErrorToFailure(cause),
			FailureInfo: &failurepb.Failure_ActivityFailureInfo{ActivityFailureInfo: &failurepb.ActivityFailureInfo{
				ActivityType: &commonpb.ActivityType{Name: AttemptActivityName}, RetryState: state,
			}},
		})
	}
	_, withDetails := failing(4)
	_, noDetails := rowLost(4)
	for _, c := range []struct {
		name string
		err  error
		want DeliveryOutput
	}{
		{"details", activityFailure(enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED, withDetails), DeliveryOutput{Attempts: 4, DeliveryID: "whd_4", StatusCode: 500, Error: "http_status"}},
		{"no details, attempts used up", activityFailure(enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED, noDetails), DeliveryOutput{Attempts: 7}},
		{"no details, stopped otherwise", activityFailure(enumspb.RETRY_STATE_NON_RETRYABLE_FAILURE, noDetails), DeliveryOutput{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, lastAttempt(testInput(7, activities.DefaultSchedule()).schedule(), c.err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkflowIDs(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{WorkflowID("evt_1", "whe_2"), "webhook-delivery/evt_1/whe_2"},
		{ReplayWorkflowID("evt_1", "whe_2", 1), "webhook-delivery/evt_1/whe_2/replay-1"},
		{ReplayWorkflowID("evt_1", "whe_2", 12), "webhook-delivery/evt_1/whe_2/replay-12"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
