package activities

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestEndpointHealth: deliveries that end update the endpoint's health; 5
// failed in a row over the disable window disable it, a success between
// them resets the count and the window. A blocked destination fails a
// delivery for good at its first attempt; a 200 succeeds.
func TestEndpointHealth(t *testing.T) {
	const window = 10 * time.Hour
	type step struct {
		at time.Duration // since testNow
		ok bool
	}
	fails := func(ats ...time.Duration) []step {
		out := make([]step, len(ats))
		for i, at := range ats {
			out[i] = step{at: at}
		}
		return out
	}
	at := func(d time.Duration) *time.Time { v := testNow.Add(d); return &v }
	tests := []struct {
		name   string
		window time.Duration
		steps  []step
		want   health
	}{
		{
			name: "5 failures over the window disable", window: window,
			steps: fails(0, time.Hour, 2*time.Hour, 3*time.Hour, window),
			want:  health{ConsecutiveFailures: 5, FirstFailure: true, LastFailureAt: at(window), DisabledAt: at(window), DisabledReason: ptr(models.DisabledFailing)},
		},
		{
			name: "5 failures within the window do not", window: window,
			steps: fails(0, time.Hour, 2*time.Hour, 3*time.Hour, window-time.Second),
			want:  health{Enabled: true, ConsecutiveFailures: 5, FirstFailure: true, LastFailureAt: at(window - time.Second)},
		},
		{
			name: "4 failures over the window do not", window: window,
			steps: fails(0, time.Hour, 2*time.Hour, window),
			want:  health{Enabled: true, ConsecutiveFailures: 4, FirstFailure: true, LastFailureAt: at(window)},
		},
		{
			name: "a success between resets", window: window,
			steps: []step{{at: 0}, {at: time.Hour}, {at: 2 * time.Hour, ok: true}, {at: 3 * time.Hour}, {at: 4 * time.Hour}, {at: 5 * time.Hour}, {at: window + time.Hour}},
			want:  health{Enabled: true, ConsecutiveFailures: 4, FirstFailure: true, LastSuccessAt: at(2 * time.Hour), LastFailureAt: at(window + time.Hour)},
		},
		{
			name: "a success clears the failures", window: window,
			steps: []step{{at: 0}, {at: time.Hour, ok: true}},
			want:  health{Enabled: true, LastSuccessAt: at(time.Hour), LastFailureAt: at(0)},
		},
		{
			name: "window 0 never disables", window: 0,
			steps: fails(0, window, 2*window, 3*window, 4*window, 5*window),
			want:  health{Enabled: true, ConsecutiveFailures: 6, FirstFailure: true, LastFailureAt: at(5 * window)},
		},
	}
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		for _, tc := range tests {
			t.Run(string(d)+"/"+tc.name, func(t *testing.T) {
				recv := newReceiver(t, nil)
				f := newFixture(t, storetest.Open(t, d), recv.URL)
				now := testNow
				clock := func() time.Time { return now }
				ok := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, Now: clock, DisableAfter: tc.window})
				blocked := newDeliverer(t, f.store, Config{Now: clock, DisableAfter: tc.window})
				for _, s := range tc.steps {
					now = testNow.Add(s.at)
					if s.ok {
						if _, err := ok.Attempt(t.Context(), f.input()); err != nil {
							t.Fatalf("Attempt: %v", err)
						}
						continue
					}
					if _, err := blocked.Attempt(t.Context(), f.input()); err == nil {
						t.Fatal("blocked Attempt succeeded")
					}
				}
				if diff := cmp.Diff(endpointHealth(t, f), tc.want); diff != "" {
					t.Errorf("health (-got +want):\n%s", diff)
				}
			})
		}
	}
}

// TestEndpointHealthGone: a 410 disables the endpoint with reason gone, and
// counts as a failed delivery.
func TestEndpointHealthGone(t *testing.T) {
	forDialects(t, func(t *testing.T, d models.Dialect) {
		recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) })
		f := newFixture(t, storetest.Open(t, d), recv.URL)
		dl := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, DisableAfter: DefaultDisableAfter})
		if _, err := dl.Attempt(t.Context(), f.input()); err == nil {
			t.Fatal("Attempt succeeded on 410")
		}
		got := endpointHealth(t, f)
		if got.DisabledAt == nil {
			t.Error("disabled_at not set")
		}
		got.DisabledAt = nil // the store's clock, not the Deliverer's
		want := health{ConsecutiveFailures: 1, FirstFailure: true, LastFailureAt: &testNow, DisabledReason: ptr(models.DisabledGone)}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("health (-got +want):\n%s", diff)
		}
	})
}

// TestEndpointHealthCountsDeliveries: a retryable failure counts only when
// the retry policy in the activity's info allows no further attempt. The
// SDK's test environment sends no policy in the info (so none of its
// attempts is known to be the last, and nothing counts there); the rule
// itself is checked on activityInfo.last.
func TestEndpointHealthCountsDeliveries(t *testing.T) {
	recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	f := newFixture(t, storetest.Open(t, models.SQLite), recv.URL)
	dl := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, DisableAfter: DefaultDisableAfter})
	deliver := func(ctx workflow.Context, in AttemptInput) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1, MaximumAttempts: 3},
		})
		return workflow.ExecuteActivity(ctx, dl.Attempt, in).Get(ctx, nil)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(dl)
	env.RegisterWorkflow(deliver)
	env.ExecuteWorkflow(deliver, f.input())
	if env.GetWorkflowError() == nil {
		t.Fatal("delivery succeeded against a 500")
	}
	if n := len(recv.requests()); n != 3 {
		t.Errorf("receiver got %d requests, want 3", n)
	}
	if got := endpointHealth(t, f); got.ConsecutiveFailures != 0 {
		t.Errorf("retryable failures without a policy in the info counted: %+v", got)
	}

	policy := &temporal.RetryPolicy{MaximumAttempts: 3}
	local := &temporal.RetryPolicy{MaximumAttempts: 1}
	after := &temporal.RetryPolicy{MaximumAttempts: 2}
	for _, tc := range []struct {
		info activityInfo
		want bool
	}{
		// By the policy, counted by Temporal's attempt number.
		{activityInfo{try: 1, attempt: 1, policy: policy}, false},
		{activityInfo{try: 2, attempt: 2, policy: policy}, false},
		{activityInfo{try: 3, attempt: 3, policy: policy}, true},
		{activityInfo{try: 4, attempt: 4, policy: policy}, true},
		{activityInfo{try: 100, attempt: 100, policy: &temporal.RetryPolicy{}}, false},
		{activityInfo{try: 1, attempt: 1}, false},
		// By the input's RetryMax, counted by the delivery's attempt
		// number: a local attempt, whose policy allows it one, and the
		// activity after it, whose policy counts from attempt 2.
		{activityInfo{try: 1, attempt: 1, local: true, policy: local, retryMax: 3}, false},
		{activityInfo{try: 1, attempt: 3, local: true, policy: local, retryMax: 3}, true},
		{activityInfo{try: 1, attempt: 2, policy: after, retryMax: 3}, false},
		{activityInfo{try: 2, attempt: 3, policy: after, retryMax: 3}, true},
		{activityInfo{try: 3, attempt: 3, retryMax: 3}, true},
	} {
		if got := tc.info.last(); got != tc.want {
			t.Errorf("%+v: last() = %v, want %v", tc.info, got, tc.want)
		}
	}
}
