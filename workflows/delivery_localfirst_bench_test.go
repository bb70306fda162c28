package workflows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkDeliveryCPU delivers b.N events accepted at once through a
// Temporal server run in-process, with the real attempt activity and a
// SQLite store, started as the dispatcher starts them (eager start, 16 at a
// time), and reports the CPU time of the whole process (server, worker,
// store, receiver) per delivery: with the first attempt as a local
// activity (DeliveryWorkflowName), and as an activity
// (beforeLocalFirst, what the workflow did before the local first attempt
// for a delivery accepted at once). A comparison, not an assertion:
//
//	go test ./workflows -run '^$' -bench DeliveryCPU -benchtime 400x
func BenchmarkDeliveryCPU(b *testing.B) {
	for _, c := range []struct {
		name     string
		workflow string
	}{
		{"local-first", DeliveryWorkflowName},
		{"activity", "DeliveryBeforeLocalFirst"},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkDeliveryCPU(b, c.workflow) })
	}
}

// beforeLocalFirst is what Delivery did before the local first attempt,
// for a delivery accepted at once: the attempt activity, its result.
func beforeLocalFirst(ctx workflow.Context, in DeliveryInput) (DeliveryOutput, error) {
	s := in.schedule()
	ctx = workflow.WithActivityOptions(ctx, activityOptions(s, 1))
	var res activities.AttemptOutput
	if err := workflow.ExecuteActivity(ctx, AttemptActivityName, attemptInput(in, s, 1)).Get(ctx, &res); err != nil {
		return DeliveryOutput{}, err
	}
	return succeeded(res), nil
}

func benchmarkDeliveryCPU(b *testing.B, workflowName string) {
	tc := recoveryTemporal(b)
	ctx := b.Context()
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
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
	ep, _, err := store.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{URL: &recv.URL, Events: &[]string{models.EventRecordCreated}},
		func(context.Context, string) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		if _, err := store.CreateRecord(ctx, m, map[string]any{"n": i}, nil); err != nil {
			b.Fatal(err)
		}
	}
	events, err := store.PendingEvents(ctx, b.N)
	if err != nil || len(events) != b.N {
		b.Fatalf("%d pending events, %v; want %d", len(events), err, b.N)
	}
	d, err := activities.NewDeliverer(store, activities.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		b.Fatal(err)
	}
	const queue = "bench-delivery"
	w := worker.New(tc, queue, worker.Options{MaxConcurrentWorkflowTaskPollers: 32, MaxConcurrentActivityTaskPollers: 8})
	Register(w, d)
	w.RegisterWorkflowWithOptions(beforeLocalFirst, workflow.RegisterOptions{Name: "DeliveryBeforeLocalFirst"})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	jobs := make(chan models.Event)
	var wg sync.WaitGroup
	b.ResetTimer()
	before := cpuTime()
	begin := time.Now()
	for range 16 {
		wg.Go(func() {
			for ev := range jobs {
				in, err := deliveryInput(&ev, ep, activities.Schedule{}, "")
				if err != nil {
					b.Error(err)
					continue
				}
				run, err := tc.ExecuteWorkflow(ctx, startOptions(WorkflowID(ev.ID, ep.ID), queue, in, true), workflowName, in)
				if err == nil {
					err = run.Get(ctx, nil)
				}
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	for _, ev := range events {
		jobs <- ev
	}
	close(jobs)
	wg.Wait()
	elapsed, cpu := time.Since(begin), cpuTime()-before
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/delivery")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
}

// cpuTime is the CPU time this process has used, user and system.
