package workflows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkOrdering delivers b.N events through the outbox dispatcher and
// a Temporal server run in-process (one server for every case, so the
// cases compare), with the real attempt activity and a SQLite store, to an
// endpoint with ordering "none" and one with "record": b.N events over b.N
// records (one event each), and b.N events of one record. It reports
// deliveries/s and the CPU time of this whole process (server, worker,
// store, receiver) per delivery, not the machine's. A comparison, not an
// assertion:
//
//	go test ./workflows -run '^$' -bench Ordering -benchtime 200x
func BenchmarkOrdering(b *testing.B) {
	tc := recoveryTemporal(b)
	for _, c := range []struct {
		name      string
		ordering  string
		oneRecord bool
	}{
		{"none/many-records", models.OrderingNone, false},
		{"record/many-records", models.OrderingRecord, false},
		{"none/one-record", models.OrderingNone, true},
		{"record/one-record", models.OrderingRecord, true},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkOrdering(b, tc, c.ordering, c.oneRecord) })
	}
}

func benchmarkOrdering(b *testing.B, tc client.Client, ordering string, oneRecord bool) {
	ctx := b.Context()
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	store := storetest.Open(b, models.SQLite)
	tenant, _, _, err := store.CreateTenant(ctx, "bench", 100)
	if err != nil {
		b.Fatal(err)
	}
	slug, name := "things", "Things"
	m, err := store.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &[]models.Field{{Name: "n", Type: models.TypeInteger}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := store.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{
		URL: &recv.URL, Events: &[]string{models.EventRecordCreated, models.EventRecordUpdated}, Ordering: &ordering,
	}, func(context.Context, string) error { return nil }); err != nil {
		b.Fatal(err)
	}
	var rec *models.Record
	for i := range b.N {
		switch {
		case !oneRecord || rec == nil:
			rec, err = store.CreateRecord(ctx, m, map[string]any{"n": i}, nil)
		default:
			_, _, err = store.UpdateRecord(ctx, m, rec.ID, models.RecordPatch{Fields: map[string]any{"n": i}}, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	d, err := activities.NewDeliverer(store, activities.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		b.Fatal(err)
	}
	queue := "bench-ordering-" + ordering
	w := worker.New(tc, queue, worker.Options{MaxConcurrentWorkflowTaskPollers: 32, MaxConcurrentActivityTaskPollers: 8})
	Register(w, d)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	disp := &Dispatcher{Store: store, Starter: tc, TaskQueue: queue, PollInterval: 20 * time.Millisecond}
	dctx, stop := context.WithCancel(ctx)
	defer stop()

	b.ResetTimer()
	before := cpuTime()
	begin := time.Now()
	go disp.Run(dctx)
	storetest.WhileProgressing(b, time.Minute, "the deliveries", func() (int, bool) {
		n := int(got.Load())
		return n, n >= b.N
	})
	elapsed, cpu := time.Since(begin), cpuTime()-before
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/delivery")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
}
