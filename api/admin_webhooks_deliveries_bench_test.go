package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkDeliveriesPages reads pages of the deliveries list through the
// API, with RECORDHUB_LIST_BENCH_ROWS attempts (200,000 unless set) of
// the last 24 hours on one endpoint, seeded through the store, on SQLite
// and PostgreSQL: the first page, the first page of the endpoint, the
// deepest page page reaches (rows 9,981 to 10,000), and the deepest page
// by cursor, which must cost what the first does.
//
//	go test ./api -run '^$' -bench DeliveriesPages -benchtime 20x -timeout 30m
func BenchmarkDeliveriesPages(b *testing.B) {
	rows := 200_000
	if v, err := strconv.Atoi(os.Getenv("RECORDHUB_LIST_BENCH_ROWS")); err == nil && v > 0 {
		rows = v
	}
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			db := storetest.NewDB(b, d)
			store := db.Open(b, models.Options{})
			tenant, _, key, err := store.CreateTenant(ctx, "bench", 1_000_000)
			if err != nil {
				b.Fatal(err)
			}
			const endpoint = "whe_bench"
			start := time.Now()
			oldest := seedDeliveries(b, store, tenant.ID, endpoint, rows)
			b.Logf("%s: seeded %d attempts in %v", d, rows, time.Since(start).Round(time.Millisecond))
			if d == models.Postgres {
				// What autovacuum does within a minute of a bulk load: without
				// statistics the planner takes the fresh table for a small one
				// and sorts every row of the tenant for a page.
				if _, err := db.SQL(b).ExecContext(ctx, "ANALYZE webhook_deliveries"); err != nil {
					b.Fatal(err)
				}
			}
			srv := httptest.NewServer(api.New(api.Deps{
				Store: store, Limiter: unlimited{}, Logs: discardLogs{}, Registry: prometheus.NewRegistry(), Log: quietLog,
			}).Handler())
			b.Cleanup(srv.Close)
			get := func(b *testing.B, query string) {
				b.Helper()
				req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/admin/webhook-deliveries?"+query, nil)
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := srv.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d", query, res.StatusCode)
				}
			}
			for _, bc := range []struct{ name, query string }{
				{"first", "limit=20"},
				{"first-of-endpoint", "limit=20&endpoint_id=" + endpoint},
				{"deepest-by-page", "limit=20&page=500"},
				{"deepest-by-cursor", "limit=20&cursor=" + api.DeliveriesCursor(oldest.At, oldest.ID)},
				{"deepest-by-cursor-of-endpoint", "limit=20&endpoint_id=" + endpoint + "&cursor=" + api.DeliveriesCursor(oldest.At, oldest.ID)},
			} {
				b.Run(bc.name, func(b *testing.B) {
					for b.Loop() {
						get(b, bc.query)
					}
				})
			}
		})
	}
}

// seededRow is a seeded attempt's sort key.
type seededRow struct {
	At time.Time
	ID string
}

// seedDeliveries stores n finished attempts to one endpoint, spread over
// the last 24 hours, eight writers at a time, and returns the sort key of
// the 21st oldest: the cursor of the list's last page at limit 20.
func seedDeliveries(b *testing.B, store *models.Store, tenantID, endpoint string, n int) seededRow {
	b.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	step := 24 * time.Hour / time.Duration(n)
	at := func(i int) time.Time { return now.Add(-time.Duration(n-i) * step) }
	id := func(i int) string { return fmt.Sprintf("whd_bench%09d", i) }
	var (
		wg   sync.WaitGroup
		errs = make(chan error, 8)
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				status := 200
				d := &models.WebhookDelivery{ID: id(i), TenantID: tenantID, EventID: fmt.Sprintf("evt_%d", i), EventType: "record.created",
					EndpointID: endpoint, WorkflowID: "wf", RunID: "run", Attempt: 1, RequestURL: "https://example.com/hook",
					RequestBody: "{}", ResponseStatus: &status, DurationMS: 12, StartedAt: at(i), FinishedAt: at(i).Add(12 * time.Millisecond),
					Succeeded: true}
				if err := store.InsertAttempt(ctx, d); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return seededRow{At: at(20), ID: id(20)}
}
