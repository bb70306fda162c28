//go:build unix

package workflows

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// nopStarter starts every workflow at once, for benchmarks of the
// dispatcher's own work.
type nopStarter struct{}

func (nopStarter) ExecuteWorkflow(_ context.Context, opts client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	return fakeRun{id: opts.ID}, nil
}

// benchFilterSetup makes a tenant, an orders module with ten fields and
// one endpoint subscribed to record_created on it with filter (none when
// nil), and n records; it returns the store and the pending events.
func benchFilterSetup(b *testing.B, filter map[string]any, n int) (*models.Store, []models.Event) {
	b.Helper()
	ctx := b.Context()
	s := storetest.Open(b, models.SQLite)
	tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
	if err != nil {
		b.Fatal(err)
	}
	slug, name := "orders", "Orders"
	fields := []models.Field{
		{Name: "status", Type: models.TypeStatus, States: []string{"new", "paid", "shipped"}},
		{Name: "qty", Type: models.TypeInteger},
	}
	for i := range 8 {
		fields = append(fields, models.Field{Name: fmt.Sprintf("f%d", i), Type: models.TypeString})
	}
	m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		b.Fatal(err)
	}
	u, events, modules := "https://receiver.example/hook", []string{models.EventRecordCreated}, []string{m.ID}
	in := models.EndpointInput{URL: &u, Events: &events, ModuleIDs: &modules}
	if filter != nil {
		in.Filter = &filter
	}
	if _, _, err := s.CreateEndpoint(ctx, tenant.ID, in, allowURL); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		f := map[string]any{"status": "new", "qty": 7}
		for j := range 8 {
			f[fmt.Sprintf("f%d", j)] = fmt.Sprintf("value %d of record %d", j, i)
		}
		if _, err := s.CreateRecord(ctx, m, f, map[string]any{"source": "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	evs, err := s.PendingEvents(ctx, n)
	if err != nil {
		b.Fatal(err)
	}
	return s, evs
}

// BenchmarkDispatchEventFilter measures the dispatcher's work for one
// event, wall and CPU time (the endpoints read once, as a round does; the
// start answered at once): without a filter on the
// endpoint, with one the event passes (its record read from the body, two
// conditions compared, then the start), and with one it fails on its
// second condition (no start). The difference between none and passes is
// the cost of a filter per event.
//
//	go test -run '^$' -bench BenchmarkDispatchEventFilter -benchmem ./workflows/
func BenchmarkDispatchEventFilter(b *testing.B) {
	for _, c := range benchFilters {
		b.Run(c.name, func(b *testing.B) {
			s, evs := benchFilterSetup(b, c.filter, 300)
			d := &Dispatcher{Store: s, Starter: nopStarter{}, Policy: testPolicy}
			ctx := b.Context()
			eps, err := s.DispatchEndpoints(ctx, []string{evs[0].TenantID})
			if err != nil {
				b.Fatal(err)
			}
			sem := make(chan struct{}, 1)
			var failed atomic.Bool
			b.ReportAllocs()
			cpu := cpuTime()
			for i := 0; b.Loop(); i++ {
				p := d.planEvent(&evs[i%len(evs)], eps)
				p.take = len(p.targets)
				if _, err := d.dispatch(ctx, &evs[i%len(evs)], &p, sem, &failed, true); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkDispatchRoundFilter measures whole dispatcher rounds (claim,
// start, mark, on SQLite) per event, without a filter, with one every
// event passes and with one none passes.
//
//	go test -run '^$' -bench BenchmarkDispatchRoundFilter -benchtime 3000x ./workflows/
func BenchmarkDispatchRoundFilter(b *testing.B) {
	for _, c := range benchFilters {
		b.Run(c.name, func(b *testing.B) {
			s, _ := benchFilterSetup(b, c.filter, b.N)
			d := &Dispatcher{Store: s, Starter: nopStarter{}, Policy: testPolicy}
			ctx := b.Context()
			b.ResetTimer()
			cpu := cpuTime()
			marked := 0
			for marked < b.N {
				n, err := d.DispatchOnce(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					b.Fatalf("%d of %d events dispatched", marked, b.N)
				}
				marked += n
			}
			reportCPU(b, cpu)
		})
	}
}

// reportCPU reports the CPU time used since start per operation, as
// cpu-ns/op.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// benchFilters are the endpoint's filters the benchmarks compare.
var benchFilters = []struct {
	name   string
	filter map[string]any
}{
	{"none", nil},
	{"passes", map[string]any{"status": "new", "qty": 7}},
	{"fails", map[string]any{"status": "new", "qty": 8}},
}
