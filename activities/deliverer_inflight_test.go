package activities

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestAttemptRowInFlightWhileSending: while the receiver holds the request,
// the attempt's row already exists, in flight, with the request as sent; the
// outcome then lands in that same row.
func TestAttemptRowInFlightWhileSending(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			store := storetest.Open(t, dialect)
			var (
				mu       sync.Mutex
				tenantID string
				during   []models.WebhookDelivery
				readErr  error
			)
			recv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				during, _, readErr = store.ListDeliveries(r.Context(), tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 10}})
				w.WriteHeader(http.StatusNoContent)
			})
			f := newFixture(t, store, recv.URL+"/hook")
			mu.Lock()
			tenantID = f.tenantID
			mu.Unlock()
			d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})

			out, err := d.Attempt(t.Context(), f.input())
			if err != nil {
				t.Fatalf("Attempt: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if readErr != nil {
				t.Fatalf("reading the rows during the request: %v", readErr)
			}
			if len(during) != 1 {
				t.Fatalf("during the request: %d rows, want the attempt's, in flight", len(during))
			}
			reqs := recv.requests()
			if len(reqs) != 1 {
				t.Fatalf("receiver got %d requests, want 1", len(reqs))
			}
			sent := models.Headers(reqs[0].header.Clone())
			sent["Host"] = []string{reqs[0].host}

			type state struct {
				ID, Error, RequestURL, RequestBody string
				RequestHeaders                     models.Headers
				Attempt                            int
				Status                             *int
				StartedAt                          time.Time
				InFlight, Succeeded                bool
			}
			summary := func(r models.WebhookDelivery) state {
				return state{r.ID, r.Error, r.RequestURL, r.RequestBody, r.RequestHeaders, r.Attempt, r.ResponseStatus,
					r.StartedAt.UTC(), r.InFlight(), r.Succeeded}
			}
			want := state{
				ID: out.DeliveryID, Error: models.DeliveryErrInFlight, RequestURL: recv.URL + "/hook", RequestBody: f.event.Payload,
				RequestHeaders: sent, Attempt: 1, StartedAt: testNow, InFlight: true,
			}
			if diff := cmp.Diff(summary(during[0]), want); diff != "" {
				t.Errorf("row during the request (-got +want):\n%s", diff)
			}
			status := http.StatusNoContent
			want.Error, want.Status, want.InFlight, want.Succeeded = "", &status, false, true
			if diff := cmp.Diff(summary(f.onlyRow(t)), want); diff != "" {
				t.Errorf("row after the request (-got +want):\n%s", diff)
			}
		})
	}
}

// TestAttemptMarksLostAttempt: an attempt whose worker dies mid-request
// leaves its row in flight; the next attempt of the same run marks it
// worker_lost, and rows of other runs are left alone. The death is
// simulated by a store that fails attempt 1's outcome write: the row is
// left exactly as kill -9 leaves it, and Temporal retries.
func TestAttemptMarksLostAttempt(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
			f := newFixture(t, storetest.Open(t, dialect), recv.URL)
			workflowID := "webhook-delivery/" + f.event.ID + "/" + f.endpoint.ID
			otherRun := &models.WebhookDelivery{
				TenantID: f.tenantID, EventID: f.event.ID, EventType: f.event.Type, EndpointID: f.endpoint.ID,
				WorkflowID: workflowID, RunID: "an-earlier-run", Attempt: 1, RequestURL: recv.URL,
				RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{}, RequestBody: f.event.Payload,
				Error: models.DeliveryErrInFlight, StartedAt: testNow.Add(-time.Hour), FinishedAt: testNow.Add(-time.Hour),
			}
			if err := f.store.InsertAttempt(t.Context(), otherRun); err != nil {
				t.Fatal(err)
			}
			// Each reading of the clock is a second later than the last.
			var ticks atomic.Int64
			now := func() time.Time { return testNow.Add(time.Duration(ticks.Add(1)) * time.Second) }
			d := newDeliverer(t, &finishFailsOnce{Store: f.store}, Config{AllowCIDRs: loopback, Now: now})

			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			// The SDK ends a workflow task that runs over 1 s as a deadlock; on a
			// loaded 2-core CI machine a test's goroutine can wait that long.
			env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
			env.RegisterWorkflow(retriedAttempt)
			env.RegisterActivity(d)
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: workflowID})
			env.ExecuteWorkflow(retriedAttempt, f.input())
			if err := env.GetWorkflowError(); err != nil {
				t.Fatalf("workflow: %v", err)
			}
			var out AttemptOutput
			if err := env.GetWorkflowResult(&out); err != nil {
				t.Fatal(err)
			}
			if n := len(recv.requests()); n != 2 {
				t.Errorf("receiver got %d requests, want 2", n)
			}

			rows := f.rows(t)
			if len(rows) != 3 {
				t.Fatalf("got %d rows, want the other run's and two attempts: %+v", len(rows), rows)
			}
			type state struct {
				ID, RunID, Error string
				Attempt          int
				Succeeded        bool
				InFlight         bool
			}
			var got []state
			for _, r := range rows {
				got = append(got, state{r.ID, r.RunID, r.Error, r.Attempt, r.Succeeded, r.InFlight()})
			}
			run := rows[1].RunID
			want := []state{
				{otherRun.ID, "an-earlier-run", models.DeliveryErrInFlight, 1, false, true},
				{rows[1].ID, run, models.DeliveryErrWorkerLost, 1, false, false},
				{out.DeliveryID, run, "", 2, true, false},
			}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("rows (-got +want):\n%s", diff)
			}
			lost, second := rows[1], rows[2]
			if !lost.FinishedAt.Equal(second.StartedAt) || lost.ErrorMessage == "" || lost.RequestBody != f.event.Payload {
				t.Errorf("lost row finished %v (want %v, when attempt 2 started), message %q, body %q: want the request kept and a message",
					lost.FinishedAt, second.StartedAt, lost.ErrorMessage, lost.RequestBody)
			}
		})
	}
}

// retriedAttempt runs the Attempt activity with retries, as the delivery
// workflow does, on a quick schedule.
func retriedAttempt(ctx workflow.Context, in AttemptInput) (AttemptOutput, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	})
	var (
		d   *Deliverer
		out AttemptOutput
	)
	err := workflow.ExecuteActivity(ctx, d.Attempt, in).Get(ctx, &out)
	return out, err
}
