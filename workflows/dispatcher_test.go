package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

var testPolicy = RetryPolicy{Initial: 61 * time.Second, MaxInterval: 900 * time.Second, AttemptTimeout: 20 * time.Second}

func newDispatcher(f *fixture, s Starter) *Dispatcher {
	return &Dispatcher{Store: f.store, Starter: s, Policy: testPolicy}
}

// TestDispatcher: one start per (event, subscribed endpoint), with the
// deterministic id and the options that make a repeated start harmless;
// the events are marked, and a second round starts nothing.
func TestDispatcher(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			f := newFixture(t, d)
			ev1, ev2 := f.record(t), f.record(t)
			starter := newFakeStarter()
			reg := prometheus.NewRegistry()
			disp := newDispatcher(f, starter)
			disp.Metrics = NewMetrics(reg)

			n, err := disp.DispatchOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n != 2 {
				t.Errorf("%d events marked, want 2", n)
			}
			var ids []string
			for _, c := range starter.starts() {
				ids = append(ids, c.opts.ID)
			}
			want := []string{WorkflowID(ev1.ID, f.subscribed.ID), WorkflowID(ev2.ID, f.subscribed.ID)}
			if diff := cmp.Diff(want, ids, cmpSorted); diff != "" {
				t.Errorf("started workflows (-want +got):\n%s", diff)
			}
			if p := f.pending(t); len(p) != 0 {
				t.Errorf("%d events still pending", len(p))
			}
			if got := metricValue(t, disp.Metrics.starts.WithLabelValues(startStarted)); got != 2 {
				t.Errorf("starts counter %v, want 2", got)
			}

			if n, err := disp.DispatchOnce(ctx); err != nil || n != 0 {
				t.Errorf("second round: %d marked, %v", n, err)
			}
			if c := starter.numCalls(); c != 2 {
				t.Errorf("%d start calls after the second round, want 2", c)
			}
		})
	}
}

// TestDispatcherStartOptions: what a start carries, checked on what the
// dispatcher hands to the client.
func TestDispatcherStartOptions(t *testing.T) {
	f := newFixture(t, models.SQLite)
	ev := f.record(t)
	starter := newFakeStarter()
	if _, err := newDispatcher(f, starter).DispatchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	starts := starter.starts()
	if len(starts) != 1 {
		t.Fatalf("%d starts, want 1", len(starts))
	}
	got := starts[0]
	wantIn := DeliveryInput{
		TenantID: f.tenantID, EventID: ev.ID, EventType: models.EventRecordCreated, EndpointID: f.subscribed.ID,
		ModuleID: f.module.ID, RecordID: ev.RecordID, RetryMax: 7, Policy: testPolicy,
	}
	if diff := cmp.Diff(wantIn, got.in); diff != "" {
		t.Errorf("workflow input (-want +got):\n%s", diff)
	}
	o := got.opts
	if o.ID != WorkflowID(ev.ID, f.subscribed.ID) || o.TaskQueue != TaskQueue ||
		o.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE ||
		o.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL ||
		!o.WorkflowExecutionErrorWhenAlreadyStarted || !o.EnableEagerStart || o.RetryPolicy != nil {
		t.Errorf("start options %+v", o)
	}
	wantAttrs := map[temporal.SearchAttributeKeyKeyword]string{
		TenantAttr: f.tenantID, EndpointAttr: f.subscribed.ID, ModuleAttr: f.module.ID, RecordAttr: ev.RecordID, EventTypeAttr: models.EventRecordCreated,
	}
	if n := o.TypedSearchAttributes.Size(); n != len(wantAttrs) {
		t.Errorf("%d search attributes, want %d", n, len(wantAttrs))
	}
	for k, want := range wantAttrs {
		if v, ok := o.TypedSearchAttributes.GetKeyword(k); !ok || v != want {
			t.Errorf("search attribute %s = %q (set: %v), want %q", k.GetName(), v, ok, want)
		}
	}
}

// TestDispatcherAlreadyStarted: a crash after the start and before the
// marking leaves the event pending; the next round's start is refused as
// already started, and that counts as done.
func TestDispatcherAlreadyStarted(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, d)
			ev := f.record(t)
			starter := newFakeStarter()
			starter.started[WorkflowID(ev.ID, f.subscribed.ID)] = true // started before the crash
			disp := newDispatcher(f, starter)
			disp.Metrics = NewMetrics(nil)
			n, err := disp.DispatchOnce(t.Context())
			if err != nil || n != 1 {
				t.Fatalf("%d marked, %v; want 1, nil", n, err)
			}
			if p := f.pending(t); len(p) != 0 {
				t.Errorf("%d events still pending", len(p))
			}
			if s := starter.starts(); len(s) != 0 {
				t.Errorf("%d new starts, want none", len(s))
			}
			if got := metricValue(t, disp.Metrics.starts.WithLabelValues(startAlreadyStarted)); got != 1 {
				t.Errorf("already_started counter %v, want 1", got)
			}
		})
	}
}

// TestDispatcherStartFails: while Temporal is unreachable events stay
// pending; once it answers they are started, each delivery exactly once,
// also when some of an event's deliveries had started before.
func TestDispatcherStartFails(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			f := newFixture(t, d)
			second := f.endpoint(t, 3, models.EventRecordCreated)
			ev := f.record(t)
			starter := newFakeStarter()
			disp := newDispatcher(f, starter)

			starter.setFail(func(string) error { return errUnavailable })
			n, err := disp.DispatchOnce(ctx)
			if !errors.Is(err, errUnavailable) || n != 0 {
				t.Fatalf("%d marked, %v; want 0 and the start's error", n, err)
			}
			if p := f.pending(t); len(p) != 1 {
				t.Fatalf("%d events pending, want 1", len(p))
			}

			// Only the first endpoint's start goes through.
			secondID := WorkflowID(ev.ID, second.ID)
			starter.setFail(func(id string) error {
				if id == secondID {
					return errUnavailable
				}
				return nil
			})
			if _, err := disp.DispatchOnce(ctx); !errors.Is(err, errUnavailable) {
				t.Fatalf("got %v, want the start's error", err)
			}
			if p := f.pending(t); len(p) != 1 {
				t.Fatalf("%d events pending after a partial start, want 1", len(p))
			}

			starter.setFail(nil)
			if n, err := disp.DispatchOnce(ctx); err != nil || n != 1 {
				t.Fatalf("%d marked, %v; want 1, nil", n, err)
			}
			if p := f.pending(t); len(p) != 0 {
				t.Errorf("%d events still pending", len(p))
			}
			var ids []string
			for _, c := range starter.starts() {
				ids = append(ids, c.opts.ID)
			}
			want := []string{WorkflowID(ev.ID, f.subscribed.ID), secondID}
			if diff := cmp.Diff(want, ids, cmpSorted); diff != "" {
				t.Errorf("started workflows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDispatcherNoSubscriber: an event nobody subscribes to is marked
// without a start.
func TestDispatcherNoSubscriber(t *testing.T) {
	f := newFixture(t, models.SQLite)
	ctx := t.Context()
	r, err := f.store.CreateRecord(ctx, f.module, map[string]any{"title": "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.DeleteRecord(ctx, f.module, r.ID); err != nil {
		t.Fatal(err)
	}
	// Disable the endpoint that wants deletions: nobody wants either event now
	// but the creation.
	off := false
	if _, err := f.store.UpdateEndpoint(ctx, f.tenantID, f.other.ID, models.EndpointInput{Enabled: &off}, func(context.Context, string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	starter := newFakeStarter()
	if n, err := newDispatcher(f, starter).DispatchOnce(ctx); err != nil || n != 2 {
		t.Fatalf("%d marked, %v; want 2, nil", n, err)
	}
	if s := starter.starts(); len(s) != 1 || s[0].in.EventType != models.EventRecordCreated {
		t.Errorf("starts %+v, want the creation's only", s)
	}
	if p := f.pending(t); len(p) != 0 {
		t.Errorf("%d events still pending", len(p))
	}
}

// TestDispatcherRun: Run starts a delivery as soon as the store signals a
// commit, long before its poll interval; it backs off while starts fail
// instead of spinning, and catches up when they work again.
func TestDispatcherRun(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, d)
			starter := newFakeStarter()
			disp := newDispatcher(f, starter)
			disp.PollInterval = time.Hour
			disp.Metrics = NewMetrics(nil)
			stop := runDispatcher(t, disp)

			r, err := f.store.CreateRecord(t.Context(), f.module, map[string]any{"title": "x"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the start", func() bool { return len(starter.starts()) == 1 })
			waitFor(t, "the marking", func() bool { return len(f.pending(t)) == 0 })
			if got := starter.starts()[0].in; got.RecordID != r.ID || got.EndpointID != f.subscribed.ID {
				t.Errorf("started %+v", got)
			}
			stop()

			// Temporal down: a few tries, not a spin.
			starter.setFail(func(string) error { return errUnavailable })
			disp.PollInterval, disp.MaxBackoff = 20*time.Millisecond, 80*time.Millisecond
			ev := f.record(t)
			runDispatcher(t, disp)
			before := starter.numCalls()
			time.Sleep(500 * time.Millisecond)
			if n := starter.numCalls() - before; n < 2 || n > 15 {
				t.Errorf("%d start attempts in 500 ms with backoff from 20 to 80 ms", n)
			}
			if got := metricValue(t, disp.Metrics.pending); got != 1 {
				t.Errorf("pending events gauge %v, want 1", got)
			}
			starter.setFail(nil)
			waitFor(t, "the marking once Temporal is back", func() bool { return len(f.pending(t)) == 0 })
			if s := starter.starts(); len(s) != 2 || s[1].opts.ID != WorkflowID(ev.ID, f.subscribed.ID) {
				t.Errorf("starts %+v", s)
			}
		})
	}
}

// runDispatcher runs disp until the returned stop is called or the test ends.
func runDispatcher(t *testing.T, disp *Dispatcher) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		disp.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-stopped
	}
	t.Cleanup(stop)
	return stop
}

// metricValue returns the value of a counter or gauge.
func metricValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })
