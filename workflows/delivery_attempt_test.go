package workflows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// TestDeliveryRealAttempts runs the workflow with the real attempt
// activity against a receiver that fails twice: the schedule holds, every
// attempt leaves its row with its number, and the workflow reports the
// attempt that got through.
func TestDeliveryRealAttempts(t *testing.T) {
	var (
		mu       sync.Mutex
		attempts []string
		ids      []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts = append(attempts, r.Header.Get("X-Webhook-Attempt"))
		ids = append(ids, r.Header.Get("X-Webhook-Id"))
		n := len(attempts)
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	f := newFixture(t, models.SQLite)
	ep, _, err := f.store.CreateEndpoint(t.Context(), f.tenantID, models.EndpointInput{URL: &receiver.URL, Events: &[]string{models.EventRecordCreated}},
		func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	ev := f.record(t)
	d, err := activities.NewDeliverer(f.store, activities.Config{Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	in, err := deliveryInput(ev, ep, activities.DefaultSchedule(), "")
	if err != nil {
		t.Fatal(err)
	}

	var s testsuite.WorkflowTestSuite
	s.SetLogger(testLogger(t))
	env := s.NewTestWorkflowEnvironment()
	// The SDK ends a workflow task that runs over 1 s as a deadlock; on a
	// loaded 2-core CI machine a test's goroutine can wait that long.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	Register(env, d)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: WorkflowID(ev.ID, ep.ID), TaskQueue: DefaultTaskQueue})
	var starts []time.Duration
	begin := env.Now()
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		starts = append(starts, env.Now().Sub(begin))
	})
	// The first attempt runs as a local activity.
	env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) {
		starts = append(starts, env.Now().Sub(begin))
	})
	env.ExecuteWorkflow(DeliveryWorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out DeliveryOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff(seconds(0, 60, 180), starts); diff != "" {
		t.Errorf("attempt start times (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1", "2", "3"}, attempts); diff != "" {
		t.Errorf("X-Webhook-Attempt (-want +got):\n%s", diff)
	}
	if slices.IndexFunc(ids, func(id string) bool { return id != ev.ID }) >= 0 {
		t.Errorf("X-Webhook-Id %v, want %s on every attempt", ids, ev.ID)
	}
	rows, _, err := f.store.ListDeliveries(t.Context(), f.tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 10}, EndpointID: ep.ID})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(rows) // oldest first
	type row struct {
		Attempt    int
		Status     int
		Succeeded  bool
		WorkflowID string
	}
	var got []row
	for _, r := range rows {
		got = append(got, row{r.Attempt, *r.ResponseStatus, r.Succeeded, r.WorkflowID})
	}
	wid := WorkflowID(ev.ID, ep.ID)
	if diff := cmp.Diff([]row{{1, 503, false, wid}, {2, 503, false, wid}, {3, 204, true, wid}}, got); diff != "" {
		t.Errorf("delivery rows (-want +got):\n%s", diff)
	}
	if len(rows) == 3 {
		want := DeliveryOutput{Attempts: 3, DeliveryID: rows[2].ID, StatusCode: 204, Succeeded: true}
		if diff := cmp.Diff(want, out); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
	}
}
