package workflows

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

var testPolicy = activities.Schedule{Initial: 61 * time.Second, MaxInterval: 900 * time.Second, AttemptTimeout: 20 * time.Second}

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
	if o.ID != WorkflowID(ev.ID, f.subscribed.ID) || o.TaskQueue != DefaultTaskQueue ||
		o.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE ||
		o.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL ||
		!o.WorkflowExecutionErrorWhenAlreadyStarted || !o.EnableEagerStart || o.RetryPolicy != nil {
		t.Errorf("start options %+v", o)
	}
	// Temporal's task-queue fairness balances tenants.
	if o.Priority != (temporal.Priority{FairnessKey: f.tenantID}) {
		t.Errorf("priority %+v, want the tenant as fairness key", o.Priority)
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

// TestDispatcherTaskQueue: a deployment's own task queue
// (RECORDHUB_TEMPORAL_TASK_QUEUE) is where its deliveries start.
func TestDispatcherTaskQueue(t *testing.T) {
	f := newFixture(t, models.SQLite)
	f.record(t)
	starter := newFakeStarter()
	disp := newDispatcher(f, starter)
	disp.TaskQueue = "deployment-b"
	if _, err := disp.DispatchOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s := starter.starts(); len(s) != 1 || s[0].opts.TaskQueue != "deployment-b" {
		t.Errorf("starts %+v, want one on deployment-b", s)
	}
}

// TestDispatcherNotEagerAfterFailure: starts are eager; after a failed
// start, the next round starts through the task queue (a start whose answer was lost would
// leave an eager task waiting for its timeout); once a round starts
// cleanly, starts are eager again.
func TestDispatcherNotEagerAfterLostAnswer(t *testing.T) {
	f := newFixture(t, models.SQLite)
	starter := newFakeStarter()
	disp := newDispatcher(f, starter)
	round := func() []bool {
		t.Helper()
		before := len(starter.starts())
		if _, err := disp.DispatchOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		var eager []bool
		for _, s := range starter.starts()[before:] {
			eager = append(eager, s.opts.EnableEagerStart)
		}
		return eager
	}
	fail := func(err error) {
		t.Helper()
		f.record(t)
		starter.setFail(func(string) error { return err })
		if _, got := disp.DispatchOnce(t.Context()); !errors.Is(got, err) {
			t.Fatalf("got %v, want the start's error", got)
		}
		starter.setFail(nil)
	}
	// Temporal unreachable: the start never got there; stay eager, which
	// does not wait for pollers that are backing off.
	fail(errUnavailable)
	if got := round(); !slices.Equal(got, []bool{true}) {
		t.Errorf("the round after a refused connection: eager %v, want eager", got)
	}
	for _, lost := range []error{serviceerror.NewDeadlineExceeded("deadline exceeded"), context.DeadlineExceeded} {
		fail(lost)
		if got := round(); !slices.Equal(got, []bool{false}) {
			t.Errorf("the round after %v: eager %v, want through the task queue", lost, got)
		}
		f.record(t)
		if got := round(); !slices.Equal(got, []bool{true}) {
			t.Errorf("after a clean round: eager %v, want eager", got)
		}
	}
}

// TestDispatchersShareOutbox: the dispatchers of two worker processes (two
// stores on one database) never start the same event: every event is
// started exactly once, no start is refused as already started, and both
// take a share.
func TestDispatchersShareOutbox(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := storetest.NewDB(t, d)
			stores := []*models.Store{db.Open(t, models.Options{}), db.Open(t, models.Options{})}
			f := newFixtureOn(t, stores[0])
			const n = 300
			for range n {
				f.record(t)
			}
			server := newFakeStarter()
			server.delay = time.Millisecond // a start takes a round trip
			var counts [2]*countingStarter
			for i, s := range stores {
				counts[i] = &countingStarter{Starter: server}
				runDispatcher(t, &Dispatcher{Store: s, Starter: counts[i], Policy: testPolicy, BatchSize: 25, PollInterval: 10 * time.Millisecond})
			}
			storetest.Eventually(t, 10*time.Second, "every event dispatched", func() bool { return len(f.pending(t)) == 0 })

			started := map[string]int{}
			for _, s := range server.starts() {
				started[s.opts.ID]++
			}
			if len(started) != n {
				t.Errorf("%d events started, want %d", len(started), n)
			}
			for id, c := range started {
				if c != 1 {
					t.Errorf("%s started %d times", id, c)
				}
			}
			if calls := server.numCalls(); calls != n {
				t.Errorf("%d start calls for %d events: %d refused as already started", calls, n, calls-n)
			}
			a, b := counts[0].n.Load(), counts[1].n.Load()
			t.Logf("starts per dispatcher: %d and %d", a, b)
			if a == 0 || b == 0 {
				t.Errorf("starts per dispatcher: %d and %d; both should take a share", a, b)
			}
		})
	}
}

// TestDispatcherTakesOverDeadClaims: the events a dispatcher claimed before
// it was killed wait for its lease, then another dispatcher starts them,
// each once.
func TestDispatcherTakesOverDeadClaims(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			clock := storetest.NewClock()
			f := newFixtureOn(t, storetest.NewDB(t, d).Open(t, models.Options{Now: clock.Now}))
			ev1, ev2 := f.record(t), f.record(t)
			// The dead dispatcher claimed both and was killed before it
			// started them.
			if got, err := f.store.ClaimEvents(ctx, models.Claim{Owner: "killed", Limit: 10, Lease: DefaultLease}); err != nil || len(got) != 2 {
				t.Fatalf("claimed %d, %v", len(got), err)
			}
			starter := newFakeStarter()
			disp := newDispatcher(f, starter)
			if n, err := disp.DispatchOnce(ctx); err != nil || n != 0 {
				t.Fatalf("under the dead one's lease: %d claimed, %v", n, err)
			}
			clock.Advance(DefaultLease + time.Second)
			if n, err := disp.DispatchOnce(ctx); err != nil || n != 2 {
				t.Fatalf("after the lease: %d claimed, %v; want 2", n, err)
			}
			var got []string
			for _, s := range starter.starts() {
				got = append(got, s.opts.ID)
			}
			want := []string{WorkflowID(ev1.ID, f.subscribed.ID), WorkflowID(ev2.ID, f.subscribed.ID)}
			if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
				t.Errorf("started (-want +got):\n%s", diff)
			}
			if p := f.pending(t); len(p) != 0 {
				t.Errorf("%d events still pending", len(p))
			}
		})
	}
}

// countingStarter counts the starts one dispatcher makes.
type countingStarter struct {
	Starter
	n atomic.Int64
}

func (c *countingStarter) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	run, err := c.Starter.ExecuteWorkflow(ctx, o, wf, args...)
	if err == nil {
		c.n.Add(1)
	}
	return run, err
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
	// Delete the endpoint that wants deletions: nobody wants either event now
	// but the creation. (A disabled one would still want it: see
	// TestDispatcherSkipsDisabled.)
	if err := f.store.DeleteEndpoint(ctx, f.tenantID, f.other.ID); err != nil {
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
			storetest.Eventually(t, 10*time.Second, "the start", func() bool { return len(starter.starts()) == 1 })
			storetest.Eventually(t, 10*time.Second, "the marking", func() bool { return len(f.pending(t)) == 0 })
			if got := starter.starts()[0].in; got.RecordID != r.ID || got.EndpointID != f.subscribed.ID {
				t.Errorf("started %+v", got)
			}
			stop()

			// Temporal down: tries spaced by a backoff that doubles from a
			// tenth of MaxBackoff up to MaxBackoff, not a spin. Each gap
			// is at least its backoff; a loaded machine only lengthens it.
			starter.setFail(func(string) error { return errUnavailable })
			disp = newDispatcher(f, starter)
			disp.Metrics = NewMetrics(nil)
			disp.PollInterval, disp.MaxBackoff = time.Hour, 80*time.Millisecond
			ev := f.record(t)
			before := starter.numCalls()
			runDispatcher(t, disp)
			backoffs := []time.Duration{8 * time.Millisecond, 16 * time.Millisecond, 32 * time.Millisecond, 64 * time.Millisecond, 80 * time.Millisecond, 80 * time.Millisecond}
			storetest.Eventually(t, 10*time.Second, "failed tries to outlast the backoff's growth", func() bool {
				return starter.numCalls()-before > len(backoffs)
			})
			at := starter.callTimes(before)
			for i, want := range backoffs {
				if gap := at[i+1].Sub(at[i]); gap < want {
					t.Errorf("try %d came %v after the one before, want at least the backoff %v", i+2, gap, want)
				}
			}
			if got := metricValue(t, disp.Metrics.pending); got != 1 {
				t.Errorf("pending events gauge %v, want 1", got)
			}
			starter.setFail(nil)
			storetest.Eventually(t, 10*time.Second, "the marking once Temporal is back", func() bool { return len(f.pending(t)) == 0 })
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

// TestDispatcherRunWokenByOtherProcess: on PostgreSQL, a dispatcher whose
// store (a worker's) listens for the outbox's notifications starts the
// delivery of an event another store (an API replica's) committed, with a
// poll interval of an hour: the other process's NOTIFY woke it.
func TestDispatcherRunWokenByOtherProcess(t *testing.T) {
	db := storetest.NewDB(t, models.Postgres)
	api := db.Open(t, models.Options{AnnounceEvents: true})
	worker := db.Open(t, models.Options{})
	f := newFixtureOn(t, api)
	worker.ListenEvents(slog.New(slog.DiscardHandler))
	// The listener wakes the dispatcher once LISTEN has taken effect (events
	// committed before it were not announced to it); the worker's store
	// writes nothing, so this is the first wake-up it gives.
	select {
	case <-worker.EventWake():
	case <-time.After(10 * time.Second):
		t.Fatal("the worker's listener did not connect within 10s")
	}

	starter := newFakeStarter()
	disp := &Dispatcher{Store: worker, Starter: starter, Policy: testPolicy, PollInterval: time.Hour, Metrics: NewMetrics(nil)}
	runDispatcher(t, disp)
	for i := range 2 {
		r, err := api.CreateRecord(t.Context(), f.module, map[string]any{"title": "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		storetest.Eventually(t, 10*time.Second, "the start", func() bool { return len(starter.starts()) == i+1 })
		if got := starter.starts()[i].in; got.RecordID != r.ID || got.EndpointID != f.subscribed.ID {
			t.Errorf("started %+v", got)
		}
	}
	storetest.Eventually(t, 10*time.Second, "the marking", func() bool { return len(f.pending(t)) == 0 })
}

// TestDispatcherFairByDeliveries: tenant A's ten events, each wanted by
// 99 endpoints, do not hold up tenant B's one event written
// after A's first round: B's delivery starts in the next round, while most
// of A's are still pending, and no round starts more than RoundStarts.
// Then A's deliveries are all started, each once, over the later rounds.
func TestDispatcherFairByDeliveries(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			a := newFixture(t, d)
			// The most a tenant may have: the fixture's two and 98.
			for range models.DefaultMaxEndpointsPerTenant - 2 {
				a.endpoint(t, 5, models.EventRecordCreated)
			}
			for range 10 {
				a.record(t)
			}
			const fanout = models.DefaultMaxEndpointsPerTenant - 1 // all but a.other
			starter := newFakeStarter()
			disp := newDispatcher(a, starter)
			round := func() {
				t.Helper()
				before := starter.numCalls()
				n, err := disp.DispatchOnce(ctx)
				if err != nil {
					t.Fatal(err)
				}
				// A round that started events in part reports them, so
				// that Run goes on at once instead of waiting for a poll.
				if started := starter.numCalls() - before; started > DefaultRoundStarts || (started > 0) != (n > 0) {
					t.Errorf("a round made %d starts and reported %d events, want %d starts at most, and events when it made starts",
						started, n, DefaultRoundStarts)
				}
			}
			round()

			b := a.neighbour(t, "https://b.example/hook")
			if _, err := a.store.CreateRecord(ctx, b.module, map[string]any{}, nil); err != nil {
				t.Fatal(err)
			}
			round()
			var bStarted bool
			aStarts := 0
			for _, c := range starter.starts() {
				if c.in.TenantID == b.tenantID {
					bStarted = bStarted || c.in.EndpointID == b.endpoint.ID
				} else {
					aStarts++
				}
			}
			if !bStarted || aStarts > 2*DefaultRoundStarts {
				t.Fatalf("after two rounds: B's delivery started %v, A's %d of %d; want B's, and A's %d at most",
					bStarted, aStarts, 10*fanout, 2*DefaultRoundStarts)
			}

			for i := 0; len(a.pending(t)) > 0; i++ {
				if i > 10*fanout {
					t.Fatalf("%d events still pending after %d rounds", len(a.pending(t)), i)
				}
				round()
			}
			calls := starter.numCalls()
			if starts := len(starter.starts()); calls != 10*fanout+1 || starts != calls {
				t.Errorf("%d start calls, %d of them started; want %d, each started once", calls, starts, 10*fanout+1)
			}
		})
	}
}
