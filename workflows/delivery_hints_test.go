package workflows

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// dialects are the stores the tests below run on.
var dialects = []models.Dialect{models.SQLite, models.Postgres}

// hintStart is the test environment's clock at the start: whole seconds,
// so that an HTTP date (second precision) is an exact delay.
var hintStart = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// hintRun is one delivery run under time skipping with the real attempt
// activity against handler.
type hintRun struct {
	f        *fixture
	endpoint *models.WebhookEndpoint
	// starts are the attempts' start times since the workflow started.
	starts []time.Duration
	err    error
}

// runHinted delivers one event to an endpoint with retryMax whose receiver
// is handler; handler gets the environment's clock.
func runHinted(t *testing.T, d models.Dialect, retryMax int, handler func(now time.Time, w http.ResponseWriter, r *http.Request)) *hintRun {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(testLogger(t))
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetStartTime(hintStart)

	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler(env.Now(), w, r) }))
	t.Cleanup(receiver.Close)
	f := newFixture(t, d)
	ep, _, err := f.store.CreateEndpoint(t.Context(), f.tenantID,
		models.EndpointInput{URL: &receiver.URL, Events: &[]string{models.EventRecordCreated}, RetryMax: &retryMax},
		func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	ev := f.record(t)
	deliverer, err := activities.NewDeliverer(f.store, activities.Config{
		Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Now: env.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	in, err := deliveryInput(ev, ep, activities.DefaultSchedule(), "")
	if err != nil {
		t.Fatal(err)
	}
	Register(env, deliverer)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: WorkflowID(ev.ID, ep.ID), TaskQueue: DefaultTaskQueue})
	run := &hintRun{f: f, endpoint: ep}
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		run.starts = append(run.starts, env.Now().Sub(hintStart))
	})
	// The first attempt runs as a local activity.
	env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) {
		run.starts = append(run.starts, env.Now().Sub(hintStart))
	})
	env.ExecuteWorkflow(DeliveryWorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	run.err = env.GetWorkflowError()
	return run
}

func (r *hintRun) rows(t *testing.T) []models.WebhookDelivery {
	t.Helper()
	rows, _, err := r.f.store.ListDeliveries(t.Context(), r.f.tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 100}, EndpointID: r.endpoint.ID})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestDeliveryHundredAttempts: retry_max 100 makes 100 attempts, 60, 120,
// 240, 480 s apart and 960 s from then on, each with its row.
func TestDeliveryHundredAttempts(t *testing.T) {
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			run := runHinted(t, d, 100, func(_ time.Time, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
			})
			if run.err == nil {
				t.Fatal("delivery succeeded, want it to fail after 100 attempts")
			}
			want := seconds(0, 60, 180, 420, 900)
			for len(want) < 100 {
				want = append(want, want[len(want)-1]+960*time.Second)
			}
			if diff := cmp.Diff(want, run.starts); diff != "" {
				t.Errorf("attempt start times (-want +got):\n%s", diff)
			}
			if got := len(run.rows(t)); got != 100 {
				t.Errorf("got %d delivery rows, want 100", got)
			}
		})
	}
}

// TestDeliveryRetryAfter: a Retry-After on a 429 or 503 sets the delay
// before the next attempt to the larger of it and the schedule's, capped at
// 960 s; other answers' Retry-After, and unreadable ones, leave the schedule.
func TestDeliveryRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter func(now time.Time) string
		want       time.Duration // start of attempt 2
	}{
		{"seconds", http.StatusServiceUnavailable, fixed("300"), 300 * time.Second},
		{"capped", http.StatusTooManyRequests, fixed("5000"), 960 * time.Second},
		{"http date", http.StatusServiceUnavailable, func(now time.Time) string { return now.Add(400 * time.Second).Format(http.TimeFormat) }, 400 * time.Second},
		{"date capped", http.StatusTooManyRequests, func(now time.Time) string { return now.Add(3 * time.Hour).Format(http.TimeFormat) }, 960 * time.Second},
		{"shorter than the schedule", http.StatusTooManyRequests, fixed("5"), 60 * time.Second},
		{"date in the past", http.StatusTooManyRequests, func(now time.Time) string { return now.Add(-time.Hour).Format(http.TimeFormat) }, 60 * time.Second},
		{"negative", http.StatusServiceUnavailable, fixed("-300"), 60 * time.Second},
		{"unreadable", http.StatusServiceUnavailable, fixed("soon"), 60 * time.Second},
		{"not on a 500", http.StatusInternalServerError, fixed("300"), 60 * time.Second},
	}
	for _, d := range dialects {
		for _, tc := range tests {
			t.Run(string(d)+"/"+tc.name, func(t *testing.T) {
				var n atomic.Int32
				run := runHinted(t, d, 5, func(now time.Time, w http.ResponseWriter, _ *http.Request) {
					if n.Add(1) == 1 {
						w.Header().Set("Retry-After", tc.retryAfter(now))
						w.WriteHeader(tc.status)
						return
					}
					w.WriteHeader(http.StatusNoContent)
				})
				if run.err != nil {
					t.Fatal(run.err)
				}
				if diff := cmp.Diff([]time.Duration{0, tc.want}, run.starts); diff != "" {
					t.Errorf("attempt start times (-want +got):\n%s", diff)
				}
				if got := len(run.rows(t)); got != 2 {
					t.Errorf("got %d delivery rows, want 2", got)
				}
			})
		}
	}
}

func fixed(v string) func(time.Time) string { return func(time.Time) string { return v } }

// TestDeliveryGone: a 410 Gone disables the endpoint at once and ends the
// delivery after its one attempt, which leaves one row.
func TestDeliveryGone(t *testing.T) {
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			var n atomic.Int32
			run := runHinted(t, d, 5, func(_ time.Time, w http.ResponseWriter, _ *http.Request) {
				n.Add(1)
				w.WriteHeader(http.StatusGone)
			})
			var appErr *temporal.ApplicationError
			if !errors.As(run.err, &appErr) || appErr.Type() != DeliveryFailedErrorType {
				t.Fatalf("workflow error = %v, want %s", run.err, DeliveryFailedErrorType)
			}
			if got := n.Load(); got != 1 {
				t.Errorf("receiver got %d requests, want 1", got)
			}
			if diff := cmp.Diff(seconds(0), run.starts); diff != "" {
				t.Errorf("attempt start times (-want +got):\n%s", diff)
			}
			rows := run.rows(t)
			if len(rows) != 1 {
				t.Fatalf("got %d delivery rows, want 1", len(rows))
			}
			if r := rows[0]; r.ResponseStatus == nil || *r.ResponseStatus != http.StatusGone || r.Error != models.DeliveryErrHTTPStatus || r.Succeeded {
				t.Errorf("row: status %v, error %q, succeeded %v; want 410, %q, false", r.ResponseStatus, r.Error, r.Succeeded, models.DeliveryErrHTTPStatus)
			}
			ep, err := run.f.store.GetEndpoint(t.Context(), run.f.tenantID, run.endpoint.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ep.Enabled {
				t.Error("endpoint still enabled after 410 Gone")
			}
		})
	}
}
