package workflows

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// flippingReceiver answers 503 until ok is set, then 204, and counts the
// requests of each webhook id.
type flippingReceiver struct {
	srv *httptest.Server
	ok  atomic.Bool
	mu  sync.Mutex
	got map[string]int
}

func (r *flippingReceiver) requests() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.got))
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// stallingStarter starts replays until it has started after of them; later
// starts block until their context ends: a worker that hangs mid-page
// until it is stopped.
type stallingStarter struct {
	activities.ReplayStarter
	after   int64
	started atomic.Int64
	stalled chan struct{}
	once    sync.Once
}

func (s *stallingStarter) StartReplay(ctx context.Context, ev *models.Event, ep *models.WebhookEndpoint, replayOf, workflowID string) error {
	if s.started.Add(1) > s.after {
		s.once.Do(func() { close(s.stalled) })
		<-ctx.Done()
		return ctx.Err()
	}
	return s.ReplayStarter.StartReplay(ctx, ev, ep, replayOf, workflowID)
}

// recoveryRig is a tenant with one endpoint on a store, a receiver, and
// workers on a real Temporal server: what the recovery test and benchmark
// share.
type recoveryRig struct {
	tb       testing.TB
	c        client.Client
	store    *models.Store
	queue    string
	rcv      *flippingReceiver
	tenantID string
	module   *models.Module
	ep       *models.WebhookEndpoint
	policy   activities.Schedule
	deliver  *activities.Deliverer
	replayer *Replayer
}

// worker starts a worker that delivers and recovers, starting replays
// with starter.
func (r *recoveryRig) worker(starter activities.ReplayStarter) worker.Worker {
	// The pollers of cmd/recordhub's workers.
	w := worker.New(r.c, r.queue, worker.Options{MaxConcurrentWorkflowTaskPollers: 32, MaxConcurrentActivityTaskPollers: 8})
	Register(w, r.deliver)
	RegisterRecovery(w, activities.NewRecoverer(r.store, starter, 0, nil))
	if err := w.Start(); err != nil {
		r.tb.Fatal(err)
	}
	r.tb.Cleanup(w.Stop)
	return w
}

// count returns how many of the endpoint's delivery rows match q.
func (r *recoveryRig) count(q models.DeliveryQuery) int64 {
	q.Page, q.EndpointID = models.Page{Page: 1, Limit: 1}, r.ep.ID
	_, n, err := r.store.ListDeliveries(r.tb.Context(), r.tenantID, q)
	if err != nil {
		r.tb.Fatal(err)
	}
	return n
}

// failDeliveries raises n events and delivers them, through the outbox
// dispatcher, to a receiver that answers 503, one attempt each; a worker
// must be running. It returns how long the deliveries took.
func (r *recoveryRig) failDeliveries(n int) time.Duration {
	ctx := r.tb.Context()
	for i := range n {
		if _, err := r.store.CreateRecord(ctx, r.module, map[string]any{"n": i}, nil); err != nil {
			r.tb.Fatal(err)
		}
	}
	began := time.Now()
	dctx, stop := context.WithCancel(ctx)
	d := &Dispatcher{Store: r.store, Starter: r.c, Policy: r.policy, TaskQueue: r.queue, PollInterval: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); d.Run(dctx) }()
	storetest.WhileProgressing(r.tb, time.Minute, fmt.Sprintf("%d failed deliveries", n), func() (int, bool) {
		got := r.count(models.DeliveryQuery{Succeeded: ptr(false), Error: models.DeliveryErrHTTPStatus})
		return int(got), got == int64(n)
	})
	took := time.Since(began)
	stop()
	<-done
	return took
}

// rows returns all of the endpoint's delivery rows.
func (r *recoveryRig) rows() []models.WebhookDelivery {
	var rows []models.WebhookDelivery
	for page := 1; ; page++ {
		got, _, err := r.store.ListDeliveries(r.tb.Context(), r.tenantID, models.DeliveryQuery{Page: models.Page{Page: page, Limit: 500}, EndpointID: r.ep.ID})
		if err != nil {
			r.tb.Fatal(err)
		}
		rows = append(rows, got...)
		if len(got) < 500 {
			return rows
		}
	}
}

// receiverBack makes the receiver answer 204, and the endpoint retry.
func (r *recoveryRig) receiverBack() {
	r.rcv.ok.Store(true)
	if _, err := r.store.UpdateEndpoint(r.tb.Context(), r.tenantID, r.ep.ID, models.EndpointInput{RetryMax: ptr(5)}, nil); err != nil {
		r.tb.Fatal(err)
	}
}

// waitRecovery waits for the recovery to end and returns it.
func (r *recoveryRig) waitRecovery(id string) *models.WebhookRecovery {
	var (
		done *models.WebhookRecovery
		err  error
	)
	storetest.WhileProgressing(r.tb, time.Minute, "the recovery to end", func() (int, bool) {
		done, err = r.store.GetRecovery(r.tb.Context(), r.tenantID, r.ep.ID, id)
		if err != nil {
			return -1, false
		}
		return done.Found + done.Replayed + done.Failed, done.Status != models.RecoveryRunning
	})
	return done
}

// TestRecoveryEndToEnd: an endpoint whose receiver failed 1,000
// deliveries is recovered once the receiver is back, on a real Temporal
// server run in-process, against SQLite and PostgreSQL. The worker running
// the recovery hangs mid-way and is stopped; a second worker finishes it.
// Every failed event is replayed by exactly one execution and arrives;
// the recovery's counts match.
func TestRecoveryEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 deliveries: not in -short")
	}
	const events = 1000
	c := recoveryTemporal(t)
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			rig := newRecoveryRig(t, c, d)
			// Worker 1 hangs after a third of the replays.
			stall := &stallingStarter{ReplayStarter: rig.replayer, after: events * 35 / 100, stalled: make(chan struct{})}
			w1 := rig.worker(stall)
			took := rig.failDeliveries(events)
			t.Logf("%d failed deliveries in %s", events, took.Round(time.Millisecond))
			rig.receiverBack()

			// A short heartbeat: the stopped worker's page is retried
			// within seconds rather than DefaultPageHeartbeat.
			recoveries := &Recoveries{Starter: c, Store: rig.store, TaskQueue: rig.queue, PageHeartbeat: 2 * time.Second}
			began := time.Now()
			rec, err := recoveries.Start(ctx, rig.tenantID, rig.ep.ID, time.Now().Add(-time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := RecoveryWorkflowID(rig.ep.ID, 1); rec.WorkflowID != want {
				t.Errorf("workflow id %q, want %q", rec.WorkflowID, want)
			}
			select {
			case <-stall.stalled:
			case <-time.After(2 * time.Minute):
				t.Fatal("the recovery never reached its stall")
			}
			mid, err := rig.store.GetRecovery(ctx, rig.tenantID, rig.ep.ID, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if mid.Status != models.RecoveryRunning {
				t.Fatalf("recovery %s before the restart, want running", mid.Status)
			}
			// Worker 1 is stopped mid-page; worker 2 takes the page over.
			t.Logf("stalled after %s", time.Since(began).Round(time.Millisecond))
			w1.Stop()
			t.Logf("worker 1 stopped after %s", time.Since(began).Round(time.Millisecond))
			rig.worker(rig.replayer)

			done := rig.waitRecovery(rec.ID)
			if done.Status != models.RecoveryCompleted || done.Found != events || done.Replayed != events || done.Failed != 0 || done.FinishedAt == nil {
				t.Fatalf("recovery ended %s (%q): found %d, replayed %d, failed %d; want completed with %d, %d, 0",
					done.Status, done.Error, done.Found, done.Replayed, done.Failed, events, events)
			}

			t.Logf("recovery completed after %s", time.Since(began).Round(time.Millisecond))
			// Every event arrives; each was replayed by one execution. An
			// attempt that succeeded on the stopped worker but could not
			// report it is made again (receivers dedupe on X-Webhook-Id):
			// at-least-once within an execution, not a second replay.
			// Counted by event: an attempt made again succeeds twice.
			var rows []models.WebhookDelivery
			storetest.WhileProgressing(t, time.Minute, "every event's replay to succeed", func() (int, bool) {
				rows = rig.rows()
				ok := map[string]bool{}
				for _, r := range rows {
					if r.ReplayOf != nil && r.Succeeded {
						ok[r.EventID] = true
					}
				}
				return len(ok), len(ok) == events
			})
			t.Logf("every replay succeeded after %s", time.Since(began).Round(time.Millisecond))
			replays := map[string]map[string]bool{}
			succeeded := map[string]int{}
			for _, r := range rows {
				if r.ReplayOf == nil {
					continue
				}
				if replays[r.EventID] == nil {
					replays[r.EventID] = map[string]bool{}
				}
				replays[r.EventID][r.WorkflowID] = true
				if r.Succeeded {
					succeeded[r.EventID]++
				}
			}
			if len(replays) != events {
				t.Errorf("%d events replayed, want %d", len(replays), events)
			}
			again := 0
			for ev, wids := range replays {
				if len(wids) != 1 || succeeded[ev] < 1 {
					t.Errorf("event %s: replayed by %d executions with %d successes, want 1 execution that succeeded", ev, len(wids), succeeded[ev])
				}
				if succeeded[ev] > 1 {
					again++
				}
			}
			got := rig.rcv.requests()
			for ev := range replays {
				if got[ev] < 2 { // the failed delivery and the replay
					t.Errorf("event %s reached the receiver %d times, want the failure and the replay", ev, got[ev])
				}
			}
			t.Logf("%d events recovered with a worker stopped after %d starts; %d attempts made again after the stop", events, stall.after, again)
		})
	}
}

// TestRecoverySendsSkipped: events raised while the endpoint
// is disabled leave skipped rows and no request; once it is enabled again,
// a recovery sends each of them once.
func TestRecoverySendsSkipped(t *testing.T) {
	const events = 5
	c := recoveryTemporal(t)
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			rig := newRecoveryRig(t, c, d)
			rig.rcv.ok.Store(true)
			rig.worker(rig.replayer)
			if _, err := rig.store.UpdateEndpoint(ctx, rig.tenantID, rig.ep.ID, models.EndpointInput{Enabled: ptr(false)}, nil); err != nil {
				t.Fatal(err)
			}
			for i := range events {
				if _, err := rig.store.CreateRecord(ctx, rig.module, map[string]any{"n": i}, nil); err != nil {
					t.Fatal(err)
				}
			}
			disp := &Dispatcher{Store: rig.store, Starter: c, Policy: rig.policy, TaskQueue: rig.queue}
			for {
				pending, err := rig.store.PendingEvents(ctx, 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(pending) == 0 {
					break
				}
				if _, err := disp.DispatchOnce(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if n := rig.count(models.DeliveryQuery{Error: models.DeliveryErrEndpointDisabled}); n != events {
				t.Fatalf("%d skipped rows, want %d", n, events)
			}
			if got := rig.rcv.requests(); len(got) != 0 {
				t.Fatalf("the disabled endpoint's receiver got %v", got)
			}

			if _, err := rig.store.UpdateEndpoint(ctx, rig.tenantID, rig.ep.ID, models.EndpointInput{Enabled: ptr(true)}, nil); err != nil {
				t.Fatal(err)
			}
			rec, err := (&Recoveries{Starter: c, Store: rig.store, TaskQueue: rig.queue}).Start(ctx, rig.tenantID, rig.ep.ID, time.Now().Add(-time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			if done := rig.waitRecovery(rec.ID); done.Status != models.RecoveryCompleted || done.Found != events || done.Replayed != events {
				t.Fatalf("recovery %s: found %d, replayed %d; want completed with %d each", done.Status, done.Found, done.Replayed, events)
			}
			storetest.Eventually(t, time.Minute, "the skipped events to arrive", func() bool {
				return rig.count(models.DeliveryQuery{Succeeded: ptr(true)}) == events
			})
			got := rig.rcv.requests()
			if len(got) != events {
				t.Errorf("the receiver got %d events, want %d", len(got), events)
			}
			for id, n := range got {
				if n != 1 {
					t.Errorf("event %s arrived %d times, want once", id, n)
				}
			}
		})
	}
}

// BenchmarkRecovery measures how fast a recovery starts its replays
// against how fast the same deliveries ran (replays should start at
// the rate deliveries run), on a real Temporal server run in-process and
// SQLite: 1,000 deliveries fail, then one recovery replays them.
//
//	go test ./workflows -run '^$' -bench BenchmarkRecovery -benchtime 1x
func BenchmarkRecovery(b *testing.B) {
	const events = 1000
	c := recoveryTemporal(b)
	for b.Loop() {
		rig := newRecoveryRig(b, c, models.SQLite)
		rig.worker(rig.replayer)
		failed := rig.failDeliveries(events)
		rig.receiverBack()
		began := time.Now()
		rec, err := (&Recoveries{Starter: c, Store: rig.store, TaskQueue: rig.queue}).Start(b.Context(), rig.tenantID, rig.ep.ID, time.Now().Add(-time.Hour), nil)
		if err != nil {
			b.Fatal(err)
		}
		if done := rig.waitRecovery(rec.ID); done.Replayed != events {
			b.Fatalf("recovery replayed %d of %d", done.Replayed, events)
		}
		started := time.Since(began)
		storetest.Eventually(b, 3*time.Minute, "every replay to succeed", func() bool {
			return rig.count(models.DeliveryQuery{Succeeded: ptr(true)}) >= events // no worker stops here: one success each
		})
		delivered := time.Since(began)
		b.ReportMetric(events/failed.Seconds(), "deliveries/s")
		b.ReportMetric(events/started.Seconds(), "replay-starts/s")
		b.ReportMetric(events/delivered.Seconds(), "replays-delivered/s")
	}
}
