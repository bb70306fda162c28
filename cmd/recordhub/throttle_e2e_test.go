//go:build !noembedtemporal

package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// throttleReceiver answers 204 after hold, noting each request's arrival,
// the most requests it held at once, and each event's requests.
type throttleReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	arrivals []time.Time
	by       map[string]int
	now, top int
	done     time.Time // when the last expected event arrived
	want     int
}

func newThrottleReceiver(t *testing.T, want int, hold time.Duration) *throttleReceiver {
	r := &throttleReceiver{by: map[string]int{}, want: want}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		at := time.Now()
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.arrivals = append(r.arrivals, at)
		r.by[req.Header.Get("X-Webhook-Id")]++
		if len(r.by) == r.want && r.done.IsZero() {
			r.done = at
		}
		r.now++
		r.top = max(r.top, r.now)
		r.mu.Unlock()
		time.Sleep(hold) // the receiver's work
		r.mu.Lock()
		r.now--
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *throttleReceiver) events() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.by)
}

// TestThrottleTwoWorkers: two workers on PostgreSQL and Redis share one
// Temporal server (the first's embedded one). A backlog of 2,000 events
// drains through an endpoint throttled at rate_limit 50/s: its receiver
// gets every event exactly once and counts no one-second window over 50
// (the drain rate is logged: it is a benchmark's figure, not asserted
// here). Meanwhile another endpoint of the same tenant, unthrottled,
// receives all its events before the backlog is through; an endpoint with
// max_in_flight 1 never holds two requests at once; and each throttled
// delivery left exactly one row, its attempt 1 (waiting made none).
func TestThrottleTwoWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2,000-event backlog at 50/s: not in -short")
	}
	cfg := webhookConfig(t, models.Postgres)
	cfg.RedisURL = storetest.RedisURL()
	// Both workers open the endpoints' sealed secrets with the same key.
	cfg.SecretKey = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	storetest.Redis(t) // skips, or fails when required, without Redis
	base, _ := startService(t, cfg, io.Discard)
	second := cfg
	second.Role, second.TemporalAddress = RoleWorker, fmt.Sprintf("127.0.0.1:%d", cfg.TemporalPort)
	second.DataDir = t.TempDir()
	startService(t, second, io.Discard)

	key := cfg.BootstrapAdminKey
	module := func(slug string) string {
		return jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": slug, "name": slug,
			"fields": []any{map[string]any{"name": "title", "type": "string"}}})["id"].(string)
	}
	orders, notes := module("orders"), module("notes")
	const (
		n     = 2000
		limit = 25
		few   = 60
	)
	throttled := newThrottleReceiver(t, n, 0)
	free := newThrottleReceiver(t, few, 0)
	single := newThrottleReceiver(t, few, 20*time.Millisecond)
	endpoint := func(url, module string, extra map[string]any) string {
		body := map[string]any{"url": url, "events": []string{"record_created"}, "module_ids": []string{module}}
		for k, v := range extra {
			body[k] = v
		}
		ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, body)
		return ep["id"].(string)
	}
	throttledID := endpoint(throttled.srv.URL, orders, map[string]any{"rate_limit": map[string]any{"per_second": limit}})
	endpoint(free.srv.URL, notes, nil)
	endpoint(single.srv.URL, notes, map[string]any{"max_in_flight": 1})

	burstKey := jsonCall(t, "POST", base+"/api/admin/keys", key, map[string]any{"name": "burst", "permissions": map[string]any{"*": []string{"write"}}, "rate_limit_per_minute": 1_000_000})["key"].(string)
	create := func(module string) {
		st, m := call(t, "POST", base+"/api/modules/"+module+"/records", burstKey, `{"fields":{"title":"x"}}`)
		if st != http.StatusCreated {
			t.Errorf("create: %d %v", st, m)
		}
	}
	// The other endpoints' events come among the backlog's, not behind it
	// in the outbox.
	var wg sync.WaitGroup
	wg.Go(func() { concurrently(n, 16, func() { create(orders) }) })
	wg.Go(func() { concurrently(few, 1, func() { create(notes) }) })
	wg.Wait()

	storetest.WhileProgressing(t, time.Minute, "every unthrottled delivery", func() (int, bool) {
		got := free.events()
		return got, got == few
	})
	storetest.WhileProgressing(t, time.Minute, "every throttled delivery", func() (int, bool) {
		got := throttled.events()
		return got, got == n
	})
	storetest.WhileProgressing(t, time.Minute, "every max_in_flight 1 delivery", func() (int, bool) {
		got := single.events()
		return got, got == few
	})

	throttled.mu.Lock()
	arrivals := append([]time.Time(nil), throttled.arrivals...)
	throttledDone := throttled.done
	throttled.mu.Unlock()
	sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
	most, j := 0, 0
	for i := range arrivals {
		for arrivals[i].Sub(arrivals[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	span := arrivals[len(arrivals)-1].Sub(arrivals[0])
	rate := float64(len(arrivals)-1) / span.Seconds()
	t.Logf("throttled endpoint: %d requests in %s, %.1f/s against rate_limit %d/s (%.3f×); busiest second %d",
		len(arrivals), span.Round(time.Millisecond), rate, limit, rate/limit, most)
	if most > limit {
		t.Errorf("a one-second window at the receiver held %d requests, over the rate_limit %d", most, limit)
	}
	free.mu.Lock()
	freeDone := free.done
	free.mu.Unlock()
	if freeDone.IsZero() || !freeDone.Before(throttledDone) {
		t.Errorf("the unthrottled endpoint of the same tenant finished at %v, not before the throttled one (%v)", freeDone, throttledDone)
	} else {
		t.Logf("unthrottled endpoint: all %d events %s before the throttled one's last", few, throttledDone.Sub(freeDone).Round(time.Millisecond))
	}
	single.mu.Lock()
	top := single.top
	single.mu.Unlock()
	if top != 1 {
		t.Errorf("max_in_flight 1: the receiver held %d requests at once", top)
	}
	for _, r := range []*throttleReceiver{throttled, free, single} {
		r.mu.Lock()
		for id, c := range r.by {
			if c != 1 {
				t.Errorf("event %s reached %s %d times", id, r.srv.URL, c)
			}
		}
		r.mu.Unlock()
	}

	// Rows: one per event, attempt 1, all succeeded: a wait is no attempt.
	store, err := openStore(t.Context(), cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tenantID := mustTenant(t, store, key)
	rows, _, err := store.ListDeliveries(t.Context(), tenantID, models.DeliveryQuery{EndpointID: throttledID, Page: models.Page{Page: 1, Limit: 2 * n}})
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for _, r := range rows {
		if r.Attempt != 1 || !r.Succeeded {
			wrong++
		}
	}
	if len(rows) != n || wrong > 0 {
		t.Errorf("throttled endpoint's rows: %d for %d events, %d not a succeeded attempt 1", len(rows), n, wrong)
	}
}
