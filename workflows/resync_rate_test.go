package workflows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestResyncRate measures, on one in-process Temporal server and SQLite,
// the rate of a resync (records whose snapshot reached the receiver per
// second) against the rate of live deliveries of the same server (a burst
// of creates through the outbox). It is a measurement, not a check: run it
// with RECORDHUB_RESYNC_MEASURE=1 (and RECORDHUB_RESYNC_RECORDS=10000);
// RECORDHUB_RESYNC_EAGER=0 starts the snapshots without eager start.
func TestResyncRate(t *testing.T) {
	if os.Getenv("RECORDHUB_RESYNC_MEASURE") != "1" {
		t.Skip("a measurement: set RECORDHUB_RESYNC_MEASURE=1")
	}
	records := resyncRecords(t)
	c := recoveryTemporal(t)
	ctx := t.Context()
	store := storetest.Open(t, models.SQLite)
	queue := "resync-rate"
	policy := RetryPolicy{Initial: 200 * time.Millisecond, MaxInterval: time.Second, AttemptTimeout: 5 * time.Second}
	tenant, _, _, err := store.CreateTenant(ctx, "acme", "", 600)
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
	deliver, err := activities.NewDeliverer(store, activities.Config{Timeout: 5 * time.Second, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(c, queue, worker.Options{MaxConcurrentWorkflowTaskPollers: 32, MaxConcurrentActivityTaskPollers: 8})
	Register(w, deliver)
	RegisterResync(w, activities.NewResyncer(store, &Snapshots{Starter: c, Policy: policy, TaskQueue: queue, Eager: os.Getenv("RECORDHUB_RESYNC_EAGER") != "0"}, 0, nil))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	dctx, stop := context.WithCancel(ctx)
	disp := &Dispatcher{Store: store, Starter: c, Policy: policy, TaskQueue: queue, PollInterval: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); disp.Run(dctx) }()
	defer func() { stop(); <-done }()

	burst := min(records, 2000)
	began := time.Now()
	for i := range burst {
		if _, err := store.CreateRecord(ctx, mod, map[string]any{"n": -i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	storetest.WhileProgressing(t, time.Minute, "the live burst to arrive", func() (int, bool) {
		n := int(live.Load())
		return n, n >= burst
	})
	liveTook := time.Since(began)

	began = time.Now()
	rs, err := (&Resyncs{Starter: c, Store: store, TaskQueue: queue}).Start(ctx, tenant.ID, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	var wfTook time.Duration
	storetest.WhileProgressing(t, time.Minute, "every snapshot to arrive", func() (int, bool) {
		if wfTook == 0 {
			if cur, err := store.GetResync(ctx, tenant.ID, ep.ID, rs.ID); err == nil && cur.Status != models.ResyncRunning {
				wfTook = time.Since(began)
			}
		}
		n := int(snaps.Load())
		return n, n >= records+burst
	})
	took := time.Since(began)
	storetest.Eventually(t, 10*time.Minute, "the resync to end", func() bool {
		cur, err := store.GetResync(ctx, tenant.ID, ep.ID, rs.ID)
		return err == nil && cur.Status != models.ResyncRunning
	})
	if wfTook == 0 {
		wfTook = time.Since(began)
	}
	t.Logf("live: %d deliveries in %s = %.1f/s", burst, liveTook.Round(time.Millisecond), float64(burst)/liveTook.Seconds())
	t.Logf("resync: %d records, workflow done in %s, every snapshot delivered in %s = %.1f records/s (%.2f× the live rate)",
		records+burst, wfTook.Round(time.Millisecond), took.Round(time.Millisecond), float64(records+burst)/took.Seconds(),
		(float64(records+burst)/took.Seconds())/(float64(burst)/liveTook.Seconds()))
}
