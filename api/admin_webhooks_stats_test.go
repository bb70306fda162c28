package api_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/models"
)

type attemptStats struct {
	Attempts    int      `json:"attempts"`
	Succeeded   int      `json:"succeeded"`
	SuccessRate *float64 `json:"success_rate"`
	P50MS       *float64 `json:"p50_ms"`
	P95MS       *float64 `json:"p95_ms"`
}

type statsResponse struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	attemptStats
	Hours []struct {
		Start time.Time `json:"start"`
		attemptStats
	} `json:"hours"`
}

// TestEndpointStats: include=stats counts the finished attempts of the 24
// UTC hours ending with the request's, from the start of the hour 23 hours
// before it until now, overall and hour by hour;
// skipped rows and attempts in flight are not counted, an attempt without
// a request counts but has no latency; an endpoint without attempts has
// empty stats; any other include is a 400.
func TestEndpointStats(t *testing.T) {
	now := time.Date(2030, 1, 2, 12, 30, 0, 0, time.UTC)
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d, func(d *api.Deps) { d.Now = func() time.Time { return now } })
		a := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{models.EventRecordCreated}})["id"].(string)
		b := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/b", "events": []string{models.EventRecordCreated}})["id"].(string)
		status := func(n int) *int { return &n }
		rows := []struct {
			at  time.Duration // before now
			d   models.WebhookDelivery
			why string
		}{
			{23*time.Hour + 30*time.Minute + time.Microsecond, models.WebhookDelivery{Attempt: 1, Succeeded: true, ResponseStatus: status(204), DurationMS: 1}, "before the window"},
			{23*time.Hour + 30*time.Minute, models.WebhookDelivery{Attempt: 1, Succeeded: true, ResponseStatus: status(204), DurationMS: 10}, "hour 0"},
			{90 * time.Minute, models.WebhookDelivery{Attempt: 2, ResponseStatus: status(500), Error: models.DeliveryErrHTTPStatus, DurationMS: 30}, "hour 22"},
			{30 * time.Minute, models.WebhookDelivery{Attempt: 1, Succeeded: true, ResponseStatus: status(200), DurationMS: 20}, "hour 23"},
			{10 * time.Minute, models.WebhookDelivery{Attempt: 0, Error: models.DeliveryErrEndpointDisabled}, "skipped"},
			{5 * time.Minute, models.WebhookDelivery{Attempt: 1, Error: models.DeliveryErrInFlight}, "in flight"},
			{4 * time.Minute, models.WebhookDelivery{Attempt: 3, Error: models.DeliveryErrWorkerLost, DurationMS: 0}, "hour 23, no latency"},
			{-30 * time.Minute, models.WebhookDelivery{Attempt: 1, Succeeded: true, ResponseStatus: status(204), DurationMS: 1}, "the next hour: after the window"},
		}
		for i, r := range rows {
			row := r.d
			row.TenantID, row.EndpointID, row.EventID, row.EventType = e.tenantID, a, fmt.Sprintf("evt_%d", i), models.EventRecordCreated
			row.RequestURL, row.StartedAt = "https://hooks.example.com/a", now.Add(-r.at)
			row.FinishedAt = row.StartedAt
			if err := e.store.InsertAttempt(context.Background(), &row); err != nil {
				t.Fatalf("%s: %v", r.why, err)
			}
		}

		var page statsPage
		e.call("GET", "/api/admin/webhook-endpoints?include=stats", e.admin, nil).want(200).decode(&page)
		got := map[string]*statsResponse{}
		for _, ep := range page.Data {
			got[ep.ID] = ep.Stats
		}
		sa, sb := got[a], got[b]
		if sa == nil || sb == nil {
			t.Fatalf("stats missing: %+v", page)
		}
		since := time.Date(2030, 1, 1, 13, 0, 0, 0, time.UTC)
		if !sa.Since.Equal(since) || !sa.Until.Equal(now) || len(sa.Hours) != 24 {
			t.Fatalf("window %s..%s with %d hours, want %s..%s with 24", sa.Since, sa.Until, len(sa.Hours), since, now)
		}
		wantStats(t, "A overall", sa.attemptStats, 4, 2, 20, 30)
		for i, h := range sa.Hours {
			if want := since.Add(time.Duration(i) * time.Hour); !h.Start.Equal(want) {
				t.Errorf("hour %d starts %s, want %s", i, h.Start, want)
			}
			switch i {
			case 0:
				wantStats(t, "A hour 0", h.attemptStats, 1, 1, 10, 10)
			case 22:
				wantStats(t, "A hour 22", h.attemptStats, 1, 0, 30, 30)
			case 23:
				wantStats(t, "A hour 23", h.attemptStats, 2, 1, 20, 20)
			default:
				wantStats(t, fmt.Sprintf("A hour %d", i), h.attemptStats, 0, 0, -1, -1)
			}
		}
		wantStats(t, "B overall", sb.attemptStats, 0, 0, -1, -1)
		if len(sb.Hours) != 24 {
			t.Errorf("B has %d hours, want 24", len(sb.Hours))
		}

		var one struct {
			Stats *statsResponse `json:"stats"`
		}
		e.call("GET", "/api/admin/webhook-endpoints/"+a+"?include=stats", e.admin, nil).want(200).decode(&one)
		if one.Stats == nil {
			t.Fatal("GET one endpoint with include=stats: no stats")
		}
		wantStats(t, "A alone", one.Stats.attemptStats, 4, 2, 20, 30)

		if m := e.call("GET", "/api/admin/webhook-endpoints/"+a, e.admin, nil).want(200).json(); m["stats"] != nil {
			t.Errorf("stats without include: %v", m["stats"])
		}
		for _, p := range []string{"/api/admin/webhook-endpoints?include=secret", "/api/admin/webhook-endpoints/" + a + "?include=Stats"} {
			if code := e.call("GET", p, e.admin, nil).want(400).errorCode(); code != "invalid_request" {
				t.Errorf("%s: error %q, want invalid_request", p, code)
			}
		}
		// Another tenant's list knows nothing of these attempts, and its
		// own endpoint's stats are empty.
		theirs := newEnvOn(t, e.store, func(d *api.Deps) { d.Now = func() time.Time { return now } })
		c := theirs.createEndpoint(map[string]any{"url": "https://hooks.example.com/c", "events": []string{models.EventRecordCreated}})["id"].(string)
		var other statsPage
		theirs.call("GET", "/api/admin/webhook-endpoints?include=stats", theirs.admin, nil).want(200).decode(&other)
		if len(other.Data) != 1 || other.Data[0].ID != c {
			t.Fatalf("the other tenant lists %+v", other.Data)
		}
		wantStats(t, "other tenant", other.Data[0].Stats.attemptStats, 0, 0, -1, -1)
		theirs.call("GET", "/api/admin/webhook-endpoints/"+a+"?include=stats", theirs.admin, nil).want(404)
	})
}

// wantStats checks counts exactly and percentiles within the histogram's
// relative error; a negative percentile means null, and so does the
// success rate without attempts.
func wantStats(t *testing.T, what string, got attemptStats, attempts, succeeded int, p50, p95 float64) {
	t.Helper()
	near := func(p *float64, want, within float64) bool {
		if want < 0 {
			return p == nil
		}
		return p != nil && math.Abs(*p-want) <= want*within
	}
	eq := func(p *float64, want float64) bool { return near(p, want, models.LatencyRelativeError) }
	rate := -1.0
	if attempts > 0 {
		rate = float64(succeeded) / float64(attempts)
	}
	if got.Attempts != attempts || got.Succeeded != succeeded || !near(got.SuccessRate, rate, 0) || !eq(got.P50MS, p50) || !eq(got.P95MS, p95) {
		t.Errorf("%s: %d attempts, %d succeeded, rate %v, p50 %v, p95 %v; want %d, %d, %v, %v, %v",
			what, got.Attempts, got.Succeeded, fmtp(got.SuccessRate), fmtp(got.P50MS), fmtp(got.P95MS), attempts, succeeded, rate, p50, p95)
	}
}

func fmtp(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}
