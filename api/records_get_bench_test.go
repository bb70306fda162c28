package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkGetRecord is make bench's GET scenario in process, without the
// network: one authenticated read of a record by id through the whole
// middleware chain (request id, metrics, key, rate limit, access log), on
// SQLite, with the deps serve gives an API without tracing. Its allocations
// per call are exact, so a change that adds work to every request shows
// here first:
//
//	go test ./api -run '^$' -bench GetRecord -benchmem -count 10
func BenchmarkGetRecord(b *testing.B) {
	ctx := context.Background()
	store := storetest.Open(b, models.SQLite)
	tenant, _, key, err := store.CreateTenant(ctx, "bench", 1_000_000)
	if err != nil {
		b.Fatal(err)
	}
	slug, name, fields := "notes", "Notes", []models.Field{{Name: "title", Type: models.TypeString}}
	m, err := store.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		b.Fatal(err)
	}
	rec, err := store.CreateRecord(ctx, m, map[string]any{"title": "hello"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	h := api.New(api.Deps{
		Store: store, Limiter: ratelimit.NewMemory(nil), Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
		Log: quietLog, DefaultRateLimit: 1_000_000,
	}).Handler()
	req := httptest.NewRequest(http.MethodGet, "/api/modules/"+m.ID+"/records/"+rec.ID, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET: %d %s", w.Code, w.Body)
		}
	}
}
