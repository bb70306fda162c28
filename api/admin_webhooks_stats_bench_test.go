package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// benchAPI is an API on a fresh store of dialect d, with a tenant whose
// admin key is key.
type benchAPI struct {
	db       *storetest.DB
	store    *models.Store
	h        http.Handler
	tenantID string
	key      string
}

func newBenchAPI(b *testing.B, d models.Dialect) *benchAPI {
	b.Helper()
	db := storetest.NewDB(b, d)
	store := db.Open(b, models.Options{})
	tenant, _, key, err := store.CreateTenant(context.Background(), "bench", 1_000_000)
	if err != nil {
		b.Fatal(err)
	}
	h := api.New(api.Deps{
		Store: store, Limiter: ratelimit.NewMemory(nil), Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
		Log: quietLog, DefaultRateLimit: 1_000_000, CheckURL: checkURLOffline,
	}).Handler()
	return &benchAPI{db: db, store: store, h: h, tenantID: tenant.ID, key: key}
}

// call serves one request and returns its body, failing unless it answers want.
func (a *benchAPI) call(b *testing.B, method, path, body string, want int) []byte {
	b.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, req)
	if w.Code != want {
		b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
	}
	return w.Body.Bytes()
}

func (a *benchAPI) createEndpoint(b *testing.B) string {
	b.Helper()
	var ep struct{ ID string }
	body := a.call(b, "POST", "/api/admin/webhook-endpoints", `{"url":"https://hooks.example.com/a","events":["record_created"]}`, 201)
	if err := json.Unmarshal(body, &ep); err != nil {
		b.Fatal(err)
	}
	return ep.ID
}

// seedAttempts writes n finished attempts of the last 24 hours on one
// endpoint with multi-row INSERTs, as the rows of earlier attempts, then
// has the store's one-time backfill build their hourly rollups, as after
// an upgrade.
func seedAttempts(b *testing.B, a *benchAPI, endpointID string, n int, now time.Time) {
	b.Helper()
	ctx := context.Background()
	h := a.db.SQL(b)
	r := rand.New(rand.NewPCG(1, 2))
	const perStatement = 500
	cols := "id, tenant_id, event_id, event_type, endpoint_id, workflow_id, run_id, attempt, request_url, request_body, response_status, error, duration_ms, started_at, finished_at, succeeded"
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", 16), ", ") + ")"
	tx, err := h.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for done := 0; done < n; done += perStatement {
		k := min(perStatement, n-done)
		args := make([]any, 0, 16*k)
		for i := range k {
			at := now.Add(-time.Duration(r.Int64N(int64(24 * time.Hour)))).UTC()
			status, errCode, ok := 200, "", true
			if r.IntN(10) == 0 {
				status, errCode, ok = 500, models.DeliveryErrHTTPStatus, false
			}
			evt := fmt.Sprintf("evt_%d", done+i)
			args = append(args, models.NewID(models.PrefixDelivery), a.tenantID, evt, models.EventRecordCreated, endpointID,
				"webhook-delivery/"+evt+"/"+endpointID, "run", 1, "https://hooks.example.com/a", "{}", status, errCode,
				5+r.ExpFloat64()*40, at, at, ok)
		}
		q := "INSERT INTO webhook_deliveries (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", k), ", ")
		if _, err := tx.ExecContext(ctx, a.db.Rebind(q), args...); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO endpoint_stats_backfill (pending) VALUES (1)"); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := a.store.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: backfill of %d attempts took %s", a.db.Dialect, n, time.Since(start).Round(time.Millisecond))
}

// BenchmarkEndpointStats is the console's Endpoints page on an endpoint
// with 200,000 attempts in the last 24 hours: GET
// /api/admin/webhook-endpoints?include=stats through the API, on SQLite
// and PostgreSQL.
//
//	go test ./api -run '^$' -bench EndpointStats -benchtime 20x
func BenchmarkEndpointStats(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			a := newBenchAPI(b, d)
			ep := a.createEndpoint(b)
			a.createEndpoint(b) // a second one, without attempts
			seedAttempts(b, a, ep, 200_000, time.Now())
			var page statsPage
			if err := json.Unmarshal(a.call(b, "GET", "/api/admin/webhook-endpoints?include=stats", "", 200), &page); err != nil {
				b.Fatal(err)
			}
			for _, e := range page.Data {
				if e.ID == ep && (e.Stats == nil || e.Stats.Attempts < 190_000) {
					b.Fatalf("stats of the seeded endpoint: %+v", e.Stats)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				a.call(b, "GET", "/api/admin/webhook-endpoints?include=stats", "", 200)
			}
		})
	}
}

// BenchmarkCreateWhileAttemptsFinish measures record creates (POST, the
// p50 and p99 reported) while delivery attempts are written and finished
// beside them, 200 a second, on SQLite: its writes share one writer with
// the attempts', so what an attempt's write costs shows in the creates.
//
//	go test ./api -run '^$' -bench CreateWhileAttemptsFinish -benchtime 3000x
func BenchmarkCreateWhileAttemptsFinish(b *testing.B) {
	a := newBenchAPI(b, models.SQLite)
	ep := a.createEndpoint(b)
	var mod struct{ ID string }
	body := a.call(b, "POST", "/api/admin/modules", `{"slug":"notes","name":"Notes","fields":[{"name":"title","type":"string"}]}`, 201)
	if err := json.Unmarshal(body, &mod); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		r := rand.New(rand.NewPCG(3, 4))
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			at := time.Now()
			evt := fmt.Sprintf("evt_%d", n)
			row := &models.WebhookDelivery{
				TenantID: a.tenantID, EventID: evt, EventType: models.EventRecordCreated, EndpointID: ep,
				WorkflowID: "webhook-delivery/" + evt + "/" + ep, RunID: "run", Attempt: 1,
				RequestURL: "https://hooks.example.com/a", RequestHeaders: models.Headers{}, RequestBody: "{}",
				ResponseHeaders: models.Headers{}, Error: models.DeliveryErrInFlight, StartedAt: at, FinishedAt: at,
			}
			if err := a.store.InsertAttempt(ctx, row); err != nil {
				return
			}
			status := 200
			_ = a.store.FinishAttempt(ctx, &models.WebhookDelivery{ID: row.ID, ResponseStatus: &status, ResponseHeaders: models.Headers{},
				DurationMS: 5 + r.ExpFloat64()*40, FinishedAt: time.Now(), Succeeded: true})
		}
	})
	defer func() { cancel(); wg.Wait() }()
	path := "/api/modules/" + mod.ID + "/records"
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		a.call(b, "POST", path, `{"fields":{"title":"hello"}}`, 201)
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	at := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
