package activities

import (
	"errors"
	"net/http"
	"sync/atomic"
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
// next-retry delay (a lead before the slot kept for it) and the attempt
// number it did not use; back after that wait, the same attempt is given
// its slot, sends no earlier than the slot and writes its one row.
func TestAttemptThrottled(t *testing.T) {
	store := storetest.Open(t, models.SQLite)
	var arrived atomic.Int64 // UnixNano
	recv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		arrived.Store(time.Now().UnixNano())
		w.WriteHeader(http.StatusNoContent)
	})
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

	refused := time.Now()
	out, err := d.Attempt(t.Context(), in)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeThrottled || !appErr.NonRetryable() {
		t.Fatalf("Attempt = %v, want a non-retryable %s", err, ErrTypeThrottled)
	}
	// The other request's slot is at once; this one's a second and a
	// guard later.
	slot := refused.Add(time.Second + throttle.Guard)
	if got, want := appErr.NextRetryDelay(), time.Second+throttle.Guard-slotLead; got > want || got < want-100*time.Millisecond {
		t.Errorf("wait %v, want %v: a lead before the slot", got, want)
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

	// The workflow's timer, then the same attempt again: it waits the rest
	// of the lead for its slot itself.
	time.Sleep(appErr.NextRetryDelay())
	in.Throttled = true
	if _, err := d.Attempt(t.Context(), in); err != nil {
		t.Fatalf("Attempt back at its slot: %v", err)
	}
	if row := f.onlyRow(t); row.Attempt != 3 || !row.Succeeded {
		t.Errorf("row attempt %d succeeded %v, want attempt 3, succeeded", row.Attempt, row.Succeeded)
	}
	if at := time.Unix(0, arrived.Load()); at.Before(slot) {
		t.Errorf("the request arrived %v before its slot", slot.Sub(at))
	}
}
