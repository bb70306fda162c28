package api_test

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// limiters are the limiters every rate-limit test runs with.
var limiters = []struct {
	name string
	opts func(t *testing.T) []envOption
}{
	{"memory", func(*testing.T) []envOption { return nil }},
	{"redis", func(t *testing.T) []envOption {
		return []envOption{withLimiter(redisLimiter(t, limiterPrefix()))}
	}},
}

func TestRateLimitBurst(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		for _, l := range limiters {
			t.Run(l.name, func(t *testing.T) {
				e := newEnv(t, d, l.opts(t)...)
				_, key := e.createKey(map[string]any{"rate_limit_per_minute": 5})

				var remaining []string
				for i := range 5 {
					before := time.Now().Unix()
					r := e.call("GET", "/api/modules", key, nil).want(200)
					if got := r.header.Get("X-RateLimit-Limit"); got != "5" {
						t.Errorf("call %d: X-RateLimit-Limit %q, want 5", i+1, got)
					}
					remaining = append(remaining, r.header.Get("X-RateLimit-Remaining"))
					reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
					if err != nil || reset < before {
						t.Errorf("call %d: X-RateLimit-Reset %q, want a Unix time not before %d", i+1, r.header.Get("X-RateLimit-Reset"), before)
					}
				}
				if diff := cmp.Diff([]string{"4", "3", "2", "1", "0"}, remaining); diff != "" {
					t.Errorf("X-RateLimit-Remaining (-want +got):\n%s", diff)
				}

				for i := range 2 {
					r := e.call("GET", "/api/modules", key, nil).want(http.StatusTooManyRequests)
					m := wantErrorBody(t, r, "rate_limited")
					if m["limit"] != float64(5) {
						t.Errorf("limit %v, want 5", m["limit"])
					}
					retry, ok := m["retry_after"].(float64)
					if !ok || retry < 1 || retry != float64(int(retry)) {
						t.Fatalf("retry_after %v, want an integer of at least 1", m["retry_after"])
					}
					if got, want := r.header.Get("Retry-After"), strconv.Itoa(int(retry)); got != want {
						t.Errorf("refusal %d: Retry-After %q, want %q as in the body", i+1, got, want)
					}
					if got := r.header.Get("X-RateLimit-Remaining"); got != "0" {
						t.Errorf("refusal %d: X-RateLimit-Remaining %q, want 0", i+1, got)
					}
				}

				// Concurrent calls share the budget just the same.
				_, parallel := e.createKey(map[string]any{"rate_limit_per_minute": 5})
				if diff := cmp.Diff(map[int]int{200: 5, 429: 15}, concurrentStatuses(t, e, parallel, 20)); diff != "" {
					t.Errorf("statuses of 20 concurrent calls (-want +got):\n%s", diff)
				}

				// Another key has a budget of its own; the admin key too.
				_, other := e.createKey(map[string]any{"rate_limit_per_minute": 5})
				e.call("GET", "/api/modules", other, nil).want(200)
				e.call("GET", "/api/admin/keys", e.admin, nil).want(200)
			})
		}
	})
}

// concurrentStatuses sends n calls with key at once and counts their
// statuses.
func concurrentStatuses(t *testing.T, e *env, key string, n int) map[int]int {
	t.Helper()
	var (
		mu   sync.Mutex
		got  = map[int]int{}
		errs []error
		wg   sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			req, err := http.NewRequest("GET", e.srv.URL+"/api/modules", nil)
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+key)
				var res *http.Response
				if res, err = e.srv.Client().Do(req); err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					mu.Lock()
					got[res.StatusCode]++
					mu.Unlock()
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent calls: %v", errs)
	}
	return got
}

// TestRateLimitSharedByReplicas runs two APIs, each with its own Redis
// client and limiter, on one database and one Redis: a key's budget is
// spent across both.
func TestRateLimitSharedByReplicas(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		prefix := limiterPrefix()
		db := storetest.NewDB(t, d)
		a := newEnvOn(t, db.Open(t, models.Options{}), withLimiter(redisLimiter(t, prefix)))
		b := replicaOf(t, a, db.Open(t, models.Options{}), withLimiter(redisLimiter(t, prefix)))
		_, key := a.createKey(map[string]any{"rate_limit_per_minute": 5})

		var got []int
		for i := range 10 {
			e := a
			if i%2 == 1 {
				e = b
			}
			got = append(got, e.call("GET", "/api/modules", key, nil).status)
		}
		want := []int{200, 200, 200, 200, 200, 429, 429, 429, 429, 429}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("statuses over two replicas (-want +got):\n%s", diff)
		}
	})
}
