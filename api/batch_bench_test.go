package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkBatchCreates times 100 record creates sent to a real server on
// loopback, on SQLite and PostgreSQL: as one POST /api/batch, as 100
// POSTs one after another, and as 100 POSTs from 8 clients at once. Each
// iteration is the 100 creates; creates/s is the figure to compare.
//
//	go test ./api -run '^$' -bench BatchCreates -benchtime 20x
func BenchmarkBatchCreates(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			store := storetest.NewDB(b, d).Open(b, models.Options{MaxOpenConns: 10})
			tenant, _, key, err := store.CreateTenant(ctx, "bench", 1_000_000)
			if err != nil {
				b.Fatal(err)
			}
			slug, name := "orders", "Orders"
			fields := []models.Field{{Name: "title", Type: models.TypeString}, {Name: "qty", Type: models.TypeInteger}, {Name: "price", Type: models.TypeNumber}}
			m, err := store.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(api.New(api.Deps{
				Store: store, Limiter: ratelimit.NewMemory(nil), Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
				Log: quietLog, DefaultRateLimit: 1_000_000,
			}).Handler())
			b.Cleanup(srv.Close)
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			b.Cleanup(hc.CloseIdleConnections)

			records := "/api/modules/" + m.ID + "/records"
			singles := make([][]byte, 100)
			ops := make([]map[string]any, 100)
			for i := range singles {
				in := map[string]any{"fields": map[string]any{"title": fmt.Sprint("order ", i), "qty": i, "price": 9.5}}
				singles[i] = mustJSON(b, in)
				ops[i] = map[string]any{"method": "POST", "url": records, "body": in}
			}
			batch := mustJSON(b, map[string]any{"requests": ops})
			post := func(path string, body []byte, want int) error {
				req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
				if err != nil {
					return err
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := hc.Do(req)
				if err != nil {
					return err
				}
				defer res.Body.Close()
				got, _ := io.ReadAll(res.Body)
				if res.StatusCode != want {
					return fmt.Errorf("POST %s: %d %s", path, res.StatusCode, got)
				}
				return nil
			}
			// creates/s is the rate; cpu-µs/create, the process's CPU (the
			// server's and the client's) for each create, holds better on a
			// busy machine, where the single POSTs wait their turns.
			var cpu0 time.Duration
			start := func() { cpu0 = processCPU(b) }
			report := func(b *testing.B) {
				b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "creates/s")
				b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(100*b.N), "cpu-µs/create")
			}

			b.Run("batch", func(b *testing.B) {
				start()
				for b.Loop() {
					if err := post("/api/batch", batch, http.StatusOK); err != nil {
						b.Fatal(err)
					}
				}
				report(b)
			})
			b.Run("single", func(b *testing.B) {
				start()
				for b.Loop() {
					for _, body := range singles {
						if err := post(records, body, http.StatusCreated); err != nil {
							b.Fatal(err)
						}
					}
				}
				report(b)
			})
			b.Run("single-8-clients", func(b *testing.B) {
				start()
				for b.Loop() {
					var wg sync.WaitGroup
					errs := make(chan error, 8)
					for c := range 8 {
						wg.Go(func() {
							for i := c; i < len(singles); i += 8 {
								if err := post(records, singles[i], http.StatusCreated); err != nil {
									errs <- err
									return
								}
							}
						})
					}
					wg.Wait()
					close(errs)
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				report(b)
			})
		})
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return j
}
