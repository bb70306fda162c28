package workflows

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// timedStarter counts the starts through it and adds up their time: the
// time over the wall time is how many starts were under way on average.
type timedStarter struct {
	Starter
	n, ns atomic.Int64
}

func (s *timedStarter) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	began := time.Now()
	defer func() { s.n.Add(1); s.ns.Add(int64(time.Since(began))) }()
	return s.Starter.ExecuteWorkflow(ctx, o, wf, args...)
}

// TestResyncRate measures, on one in-process Temporal server and SQLite,
// the rate of a resync (records whose snapshot reached the receiver per
// second) against the rate of live deliveries of the same server: a burst
// of creates through the outbox before the resync and one after it. For
// each phase it reports the process's CPU time per delivery (server,
// worker and store are all in it), steadier than a rate on a shared
// machine, and how long the starts took. It is a measurement, not a check:
// run it with RECORDHUB_RESYNC_MEASURE=1 (and RECORDHUB_RESYNC_RECORDS=10000).
// RECORDHUB_RESYNC_TEMPORAL=memory runs it on the test server with its
// database in memory instead of the embedded one; RECORDHUB_RESYNC_EAGER=0
// starts the snapshots without eager start; RECORDHUB_RESYNC_PROFILE=dir
// writes a CPU profile of each phase there.
func TestResyncRate(t *testing.T) {
	if os.Getenv("RECORDHUB_RESYNC_MEASURE") != "1" {
		t.Skip("a measurement: set RECORDHUB_RESYNC_MEASURE=1")
	}
	records := resyncRecords(t)
	var c client.Client
	if os.Getenv("RECORDHUB_RESYNC_TEMPORAL") == "memory" {
		c = recoveryTemporal(t)
	} else {
		c = embeddedTemporal(t)
	}
	ctx := t.Context()
	store := storetest.NewDB(t, models.SQLite).Open(t, models.Options{BulkRate: -1}) // unpaced: the resync's own rate
	queue := "resync-rate"
	policy := activities.Schedule{Initial: 200 * time.Millisecond, MaxInterval: time.Second, AttemptTimeout: 5 * time.Second}
	tenant, _, _, err := store.CreateTenant(ctx, "acme", 600)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := store.CreateModule(ctx, tenant.ID, models.ModuleInput{
		Slug: ptr("orders"), Name: ptr("Orders"), Fields: &[]models.Field{{Name: "n", Type: models.TypeInteger}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range records {
		if _, err := store.CreateRecord(ctx, mod, map[string]any{"n": i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for {
		pending, err := store.PendingEvents(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) == 0 {
			break
		}
		ids := make([]string, len(pending))
		for i, e := range pending {
			ids[i] = e.ID
		}
		if err := store.MarkDispatched(ctx, ids); err != nil {
			t.Fatal(err)
		}
	}
	var live, snaps atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Webhook-Event") == models.EventRecordSnapshot {
			snaps.Add(1)
		} else {
			live.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	url := rcv.URL
	ep, _, err := store.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{URL: &url, Events: &[]string{models.EventRecordSnapshot, models.EventRecordCreated}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliver, err := activities.NewDeliverer(store, activities.Config{Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, queue, worker.Options{MaxConcurrentWorkflowTaskPollers: 32, MaxConcurrentActivityTaskPollers: 8})
	Register(w, deliver)
	liveStarts, snapStarts := &timedStarter{Starter: c}, &timedStarter{Starter: c}
	RegisterResync(w, activities.NewResyncer(store, &Snapshots{Starter: snapStarts, Policy: policy, TaskQueue: queue, Eager: os.Getenv("RECORDHUB_RESYNC_EAGER") != "0"}, 0, nil))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	dctx, stop := context.WithCancel(ctx)
	disp := &Dispatcher{Store: store, Starter: liveStarts, Policy: policy, TaskQueue: queue, PollInterval: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); disp.Run(dctx) }()
	defer func() { stop(); <-done }()

	type phase struct {
		n      int
		took   time.Duration
		cpu    time.Duration
		starts time.Duration
	}
	rate := func(p phase) float64 { return float64(p.n) / p.took.Seconds() }
	cpuPer := func(p phase) time.Duration { return p.cpu / time.Duration(p.n) }
	startStats := func(p phase) string {
		return fmt.Sprintf("starts %s each, %.1f under way", (p.starts / time.Duration(p.n)).Round(time.Millisecond), p.starts.Seconds()/p.took.Seconds())
	}
	burst := min(records, 2000)
	liveBurst := func() phase {
		began, cpu0, from, st0 := time.Now(), cpuTime(), int(live.Load()), liveStarts.ns.Load()
		for i := range burst {
			if _, err := store.CreateRecord(ctx, mod, map[string]any{"n": -i}, nil); err != nil {
				t.Fatal(err)
			}
		}
		storetest.WhileProgressing(t, time.Minute, "the live burst to arrive", func() (int, bool) {
			n := int(live.Load()) - from
			return n, n >= burst
		})
		return phase{burst, time.Since(began), cpuTime() - cpu0, time.Duration(liveStarts.ns.Load() - st0)}
	}
	// Profiles: live-before.prof, resync.prof, live-after.prof.
	profile := func(name string) func() {
		dir := os.Getenv("RECORDHUB_RESYNC_PROFILE")
		if dir == "" {
			return func() {}
		}
		f, err := os.Create(filepath.Join(dir, name+".prof"))
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		return func() { pprof.StopCPUProfile(); f.Close() }
	}
	stopProfile := profile("live-before")
	before := liveBurst()
	stopProfile()
	stopProfile = profile("resync")

	began, cpu0, st0 := time.Now(), cpuTime(), snapStarts.ns.Load()
	rs, err := (&Resyncs{Starter: c, Store: store, TaskQueue: queue}).Start(ctx, tenant.ID, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := records + burst
	lastLog, lastSnaps := time.Now(), int64(0)
	storetest.WhileProgressing(t, time.Minute, "every snapshot to arrive", func() (int, bool) {
		n := snaps.Load()
		if time.Since(lastLog) > 10*time.Second {
			t.Logf("  resync after %s: %d snapshots delivered (%.1f/s)", time.Since(began).Round(time.Second), n, float64(n-lastSnaps)/time.Since(lastLog).Seconds())
			lastLog, lastSnaps = time.Now(), n
		}
		return int(n), int(n) >= want
	})
	resync := phase{want, time.Since(began), cpuTime() - cpu0, time.Duration(snapStarts.ns.Load() - st0)}
	stopProfile()
	storetest.Eventually(t, 10*time.Minute, "the resync to end", func() bool {
		cur, err := store.GetResync(ctx, tenant.ID, ep.ID, rs.ID)
		return err == nil && cur.Status != models.ResyncRunning
	})
	stopProfile = profile("live-after")
	after := liveBurst()
	stopProfile()
	liveRate := (rate(before) + rate(after)) / 2
	t.Logf("live before: %d deliveries in %s = %.1f/s, %s CPU each; %s", before.n, before.took.Round(time.Millisecond), rate(before), cpuPer(before).Round(time.Microsecond), startStats(before))
	t.Logf("resync:      %d records in %s = %.1f/s, %s CPU each; %s", resync.n, resync.took.Round(time.Millisecond), rate(resync), cpuPer(resync).Round(time.Microsecond), startStats(resync))
	t.Logf("live after:  %d deliveries in %s = %.1f/s, %s CPU each; %s", after.n, after.took.Round(time.Millisecond), rate(after), cpuPer(after).Round(time.Microsecond), startStats(after))
	t.Logf("resync rate %.2f× the live rate around it (%.2f× before, %.2f× after)", rate(resync)/liveRate, rate(resync)/rate(before), rate(resync)/rate(after))
}
