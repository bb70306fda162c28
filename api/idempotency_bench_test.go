package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkIdempotentCreate: a record create through the whole middleware
// chain in process, plain and with an Idempotency-Key each of its own,
// with the statements each sends to the database and the process's CPU
// per create (the server's side alone: there is no client); for profiling; the service's CPU in a process of its own,
// over HTTP, is what `go run ./cmd/recordhub-bench -idempotency` measures.
//
//	go test ./api -run '^$' -bench IdempotentCreate -benchtime 2000x
func BenchmarkIdempotentCreate(b *testing.B) {
	for _, d := range storetest.Dialects {
		for _, run := range []struct {
			keyed   bool
			clients int
		}{{false, 1}, {true, 1}, {false, 16}, {true, 16}} {
			keyed := run.keyed
			b.Run(fmt.Sprintf("%s/keyed=%t/clients=%d", d, keyed, run.clients), func(b *testing.B) {
				ctx := context.Background()
				var stmts atomic.Int64
				store := storetest.NewDB(b, d).Open(b, models.Options{OnStatement: func(string) { stmts.Add(1) }})
				tenant, _, key, err := store.CreateTenant(ctx, "bench", 1_000_000)
				if err != nil {
					b.Fatal(err)
				}
				slug, name, fields := "notes", "Notes", []models.Field{{Name: "title", Type: models.TypeString}}
				m, err := store.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
				if err != nil {
					b.Fatal(err)
				}
				h := api.New(api.Deps{
					Store: store, Limiter: ratelimit.NewMemory(nil), Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
					Log: quietLog, DefaultRateLimit: 1_000_000,
				}).Handler()
				create := func(i int64) {
					req := httptest.NewRequest(http.MethodPost, "/api/modules/"+m.ID+"/records", strings.NewReader(`{"fields":{"title":"bench"}}`))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					if keyed {
						req.Header.Set("Idempotency-Key", fmt.Sprint("bench-", i))
					}
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusCreated {
						b.Errorf("POST: %d %s", w.Code, w.Body)
					}
				}
				create(-1)
				stmts.Store(0)
				b.ReportAllocs()
				cpu0 := processCPU(b)
				b.ResetTimer()
				if run.clients == 1 {
					for i := range b.N {
						create(int64(i))
					}
				} else {
					// The service's clients 16 at a time, as the load
					// harness sends them: SQLite's writer commits them in
					// groups.
					var n atomic.Int64
					b.SetParallelism(run.clients / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							create(n.Add(1))
						}
					})
				}
				b.StopTimer()
				b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(stmts.Load())/float64(b.N), "statements/op")
			})
		}
	}
}
