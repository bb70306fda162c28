package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkOtherTenantDuringHeavyReads is the noisy neighbour: tenant A's
// endpoint has RECORDHUB_BENCH_ATTEMPTS attempts (200,000 by default) in
// the last 24 hours, and four of A's endpoint lists with include=stats
// (what the console's Endpoints page asks for on every load) run without
// pause, while tenant B's GET /api/admin/modules and record GET are timed,
// in turn. It reports B's p50, p99 and maximum, and how A's reads were
// answered (200, or 503 past their deadline); give it seconds, so that B
// is timed across several of A's reads:
//
//	go test ./api -run '^$' -bench OtherTenantDuringHeavyReads -benchtime 5s
func BenchmarkOtherTenantDuringHeavyReads(b *testing.B) {
	attempts := 200_000
	if v := os.Getenv("RECORDHUB_BENCH_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("RECORDHUB_BENCH_ATTEMPTS: %v", err)
		}
		attempts = n
	}
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			db := storetest.NewDB(b, d)
			// The pools serve opens: SQLite's read pool sized for the machine,
			// RECORDHUB_DATABASE_MAX_CONNS's default on PostgreSQL.
			conns := models.DefaultSQLiteReaders()
			if d == models.Postgres {
				conns = 20
			}
			store := db.Open(b, models.Options{MaxOpenConns: conns})
			tenantA, _, keyA, err := store.CreateTenant(ctx, "a", 1_000_000)
			if err != nil {
				b.Fatal(err)
			}
			url := "https://hooks.example.com/a"
			ep, _, err := store.CreateEndpoint(ctx, tenantA.ID, models.EndpointInput{URL: &url, Events: &[]string{models.EventRecordCreated}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			seedNoisyAttempts(b, db, store, tenantA.ID, ep.ID, attempts)
			tenantB, _, keyB, err := store.CreateTenant(ctx, "b", 1_000_000)
			if err != nil {
				b.Fatal(err)
			}
			slug, name, fields := "notes", "Notes", []models.Field{{Name: "title", Type: models.TypeString}}
			m, err := store.CreateModule(ctx, tenantB.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
			if err != nil {
				b.Fatal(err)
			}
			rec, err := store.CreateRecord(ctx, m, map[string]any{"title": "hello"}, nil)
			if err != nil {
				b.Fatal(err)
			}
			pathsB := []string{"/api/admin/modules", "/api/modules/" + m.ID + "/records/" + rec.ID}
			h := api.New(api.Deps{
				Store: store, Limiter: ratelimit.NewMemory(nil), Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
				Log: quietLog, DefaultRateLimit: 1_000_000,
			}).Handler()
			call := func(key, path string) int {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				return w.Code
			}

			heavyCtx, stop := context.WithCancel(ctx)
			var (
				wg             sync.WaitGroup
				okA, refusedA  atomic.Int64
				otherA         atomic.Int64
				heavyA         = slices.Repeat([]string{"/api/admin/webhook-endpoints?include=stats"}, 4)
				firstHeavyDone = make(chan struct{})
				once           sync.Once
			)
			for _, p := range heavyA {
				wg.Go(func() {
					for heavyCtx.Err() == nil {
						switch call(keyA, p) {
						case http.StatusOK:
							okA.Add(1)
						case http.StatusServiceUnavailable:
							refusedA.Add(1)
						default:
							otherA.Add(1)
						}
						once.Do(func() { close(firstHeavyDone) })
					}
				})
			}
			// Time B only once A's reads are under way.
			<-firstHeavyDone
			var took []time.Duration
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if code := call(keyB, pathsB[i%2]); code != http.StatusOK {
					b.Fatalf("tenant B's GET %s: %d", pathsB[i%2], code)
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			stop()
			wg.Wait()
			slices.Sort(took)
			pct := func(p float64) float64 {
				return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "B-p50-ms")
			b.ReportMetric(pct(0.99), "B-p99-ms")
			b.ReportMetric(pct(1), "B-max-ms")
			b.ReportMetric(float64(okA.Load()), "A-200")
			b.ReportMetric(float64(refusedA.Load()), "A-503")
			if n := otherA.Load(); n > 0 {
				b.Errorf("%d of A's heavy reads answered neither 200 nor 503", n)
			}
		})
	}
}

// seedNoisyAttempts writes n finished attempts of the endpoint, spread over the
// last 24 hours, in multi-row inserts: through the store one at a time
// they would take minutes.
func seedNoisyAttempts(b *testing.B, db *storetest.DB, store *models.Store, tenantID, endpointID string, n int) {
	b.Helper()
	h := db.SQL(b)
	const cols = "id, tenant_id, event_id, event_type, record_id, endpoint_id, workflow_id, run_id, attempt, request_url, request_body, response_status, duration_ms, started_at, finished_at, succeeded"
	const batch = 500
	now := time.Now().UTC()
	span := int64(24 * time.Hour)
	for i := 0; i < n; i += batch {
		m := min(batch, n-i)
		var q strings.Builder
		q.WriteString("INSERT INTO webhook_deliveries (" + cols + ") VALUES ")
		args := make([]any, 0, m*16)
		for j := range m {
			k := i + j
			if j > 0 {
				q.WriteString(",")
			}
			q.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
			at := now.Add(-time.Duration(int64(k+1) * span / int64(n+1)))
			status, ok := 200, true
			if k%10 == 0 {
				status, ok = 500, false
			}
			args = append(args, fmt.Sprintf("dlv_bench%09d", k), tenantID, fmt.Sprintf("evt_bench%09d", k), models.EventRecordCreated, "",
				endpointID, fmt.Sprintf("wf_%d", k), "run", 1, "https://hooks.example.com/a", "{}", status, float64(k%500), at, at, ok)
		}
		if _, err := h.Exec(db.Rebind(q.String()), args...); err != nil {
			b.Fatalf("seed attempts: %v", err)
		}
	}
	// The rows were written behind the store's back, as an upgrade finds
	// them: its one-time backfill builds their hourly stats rollups.
	if _, err := h.Exec("INSERT INTO endpoint_stats_backfill (pending) VALUES (1)"); err != nil {
		b.Fatalf("mark stats backfill: %v", err)
	}
	if err := store.Migrate(context.Background()); err != nil {
		b.Fatalf("stats backfill: %v", err)
	}
}
