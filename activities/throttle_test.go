package activities

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/activities/throttle"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestAttemptThrottled: an attempt to an endpoint whose throttle has no
// slot sends nothing, writes no row, counts no attempt but one throttled
// wait, and answers ErrTypeThrottled, non-retryable, with the wait as its
// next-retry delay and the attempt number it did not use; given the slot,
// the same attempt sends and writes its one row.
func TestAttemptThrottled(t *testing.T) {
	store := storetest.Open(t, models.SQLite)
	recv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f := newFixture(t, store, recv.URL+"/hook")
	one := 1
	if _, err := store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{RateLimitPerSecond: models.OptionalInt{Set: true, Value: &one}}, nil); err != nil {
		t.Fatal(err)
	}
	th := throttle.NewMemory(nil)
	// The endpoint's one request this second is taken elsewhere.
	if g, err := th.Acquire(t.Context(), throttle.Request{Key: f.endpoint.ID, Waiter: "other", Limits: throttle.Limits{PerSecond: 1}, Lease: time.Minute}); err != nil || g.Permit == nil {
		t.Fatalf("taking the slot: %+v, %v", g, err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, Throttle: th, Metrics: m})
	in := f.input()
	in.FirstAttempt = 3

	out, err := d.Attempt(t.Context(), in)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeThrottled || !appErr.NonRetryable() {
		t.Fatalf("Attempt = %v, want a non-retryable %s", err, ErrTypeThrottled)
	}
	if appErr.NextRetryDelay() < 500*time.Millisecond {
		t.Errorf("wait %v, want about the second's rest", appErr.NextRetryDelay())
	}
	if res, ok := AttemptOutcome(err); !ok || res.Attempt != 3 || out.Attempt != 3 {
		t.Errorf("outcome %+v (%v), output %+v: want attempt 3, the one not made", res, ok, out)
	}
	if rows := f.rows(t); len(rows) != 0 || len(recv.requests()) != 0 {
		t.Errorf("a throttled attempt left %d rows and sent %d requests, want none", len(rows), len(recv.requests()))
	}
	if got := testutil.ToFloat64(m.throttled); got != 1 {
		t.Errorf("throttled counter %v, want 1", got)
	}
	if got := testutil.CollectAndCount(m.attempts); got == 0 || testutil.ToFloat64(m.attempts.WithLabelValues(outcomeSuccess)) != 0 {
		t.Error("a throttled attempt was counted as an attempt")
	}

	// The next second: the slot is there, and the attempt is made.
	th2 := throttle.NewMemory(nil)
	d2 := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, Throttle: th2})
	in.Throttled = true
	if _, err := d2.Attempt(t.Context(), in); err != nil {
		t.Fatalf("Attempt with its slot: %v", err)
	}
	if row := f.onlyRow(t); row.Attempt != 3 || !row.Succeeded {
		t.Errorf("row attempt %d succeeded %v, want attempt 3, succeeded", row.Attempt, row.Succeeded)
	}
}
