package models_test

// The API's heavy routes against the store's pools: these tests need both
// the running API and the store's heavy pool in hand, which only this
// package's tests have.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// noAccessLogs drops access-log rows: the tests count the store's calls.
type noAccessLogs struct{}

func (noAccessLogs) Enqueue(models.AccessLog) bool { return true }

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// messages returns the logged lines' levels and messages.
func (b *syncBuffer) messages(t *testing.T) []string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec.Level+" "+rec.Msg)
	}
	return out
}

// heavyAPI runs the API on s with the given heavy-read deadline.
func heavyAPI(t *testing.T, s *models.Store, deadline time.Duration) (*httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	srv := api.New(api.Deps{
		Store: s, Limiter: ratelimit.NewMemory(nil), Logs: noAccessLogs{}, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewJSONHandler(logs, nil)), HeavyReadTimeout: deadline,
	})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs, logs
}

// answer is a response's status, Retry-After and error code, or the
// error of a call that got none.
type answer struct {
	status     int
	retryAfter string
	code       string
	err        error
}

// get sends GET path with key under ctx, bounded by hangGuard.
func get(ctx context.Context, srv *httptest.Server, key, path string) answer {
	ctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := srv.Client().Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var e struct{ Error string }
	json.Unmarshal(body, &e)
	return answer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), code: e.Error}
}

// heavyPaths are tenant A's heavy reads: what the console's Endpoints,
// Deliveries and Access logs pages ask for.
var heavyPaths = []string{
	"/api/admin/webhook-endpoints?include=stats",
	"/api/admin/webhook-endpoints?include=stats",
	"/api/admin/webhook-deliveries",
	"/api/admin/access-logs",
}

// TestHeavyReadsDoNotQueueOtherTenants: while tenant A's four heavy reads
// are held (waiting behind long reads that hold every heavy connection),
// tenant B's module list and record read are answered; A's reads are
// answered once the long reads end.
func TestHeavyReadsDoNotQueueOtherTenants(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			s := storetest.NewDB(t, d).Open(t, models.Options{})
			_, keyA, _, _ := tenantWithRecord(t, s, "a")
			_, keyB, m, rec := tenantWithRecord(t, s, "b")
			srv, _ := heavyAPI(t, s, hangGuard)
			release := holdHeavyPool(t, s)

			ctx := context.Background()
			waits := s.HeavyPool().Stats().WaitCount
			results := make(chan answer, len(heavyPaths))
			for _, p := range heavyPaths {
				go func() { results <- get(ctx, srv, keyA, p) }()
			}
			untilHeavyWaits(t, s, waits+int64(len(heavyPaths)))

			for _, p := range []string{"/api/admin/modules", "/api/modules/" + m.ID + "/records/" + rec.ID} {
				if got := get(ctx, srv, keyB, p); got.err != nil || got.status != http.StatusOK {
					t.Errorf("tenant B's GET %s while A's heavy reads are held: %+v, want 200", p, got)
				}
			}
			if n := len(results); n != 0 {
				t.Fatalf("%d of A's heavy reads answered while the heavy pool was held", n)
			}

			release()
			for range heavyPaths {
				if got := <-results; got.err != nil || got.status != http.StatusOK {
					t.Errorf("tenant A's heavy read once the pool is free: %+v, want 200", got)
				}
			}
		})
	}
}

// TestHeavyReadPastDeadline: a heavy read that cannot get a connection
// within its deadline answers 503 unavailable with Retry-After, logged as
// a read past its deadline and not as a database outage; the next one,
// once a connection is free, is answered. A client that goes away is
// logged as such, neither unavailable nor an internal error.
func TestHeavyReadPastDeadline(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			s := storetest.NewDB(t, d).Open(t, models.Options{})
			_, key, _, _ := tenantWithRecord(t, s, "a")
			srv, logs := heavyAPI(t, s, 200*time.Millisecond)
			release := holdHeavyPool(t, s)
			ctx := context.Background()

			for _, p := range heavyPaths {
				got := get(ctx, srv, key, p)
				if got.err != nil || got.status != http.StatusServiceUnavailable || got.code != "unavailable" || got.retryAfter != "2" {
					t.Errorf("GET %s past its deadline: %+v, want 503 unavailable, Retry-After 2", p, got)
				}
			}
			slow := "WARN heavy read past its deadline; call refused with 503"
			if got := logs.messages(t); len(got) == 0 || got[0] != slow {
				t.Errorf("log %q, want first %q", got, slow)
			}

			// A client that goes away while its read waits.
			waits := s.HeavyPool().Stats().WaitCount
			clientCtx, cancel := context.WithCancel(ctx)
			gone := make(chan answer, 1)
			go func() { gone <- get(clientCtx, srv, key, heavyPaths[2]) }()
			untilHeavyWaits(t, s, waits+1)
			cancel()
			if got := <-gone; got.err == nil {
				t.Errorf("cancelled call answered %+v", got)
			}
			want := "INFO client went away; call abandoned"
			var msgs []string
			storetest.Eventually(t, hangGuard, "the log to end with "+want, func() bool {
				msgs = logs.messages(t)
				return len(msgs) > 0 && msgs[len(msgs)-1] == want
			})
			// Nothing else: not unavailable, not an internal error.
			for _, m := range msgs {
				if m != slow && m != want {
					t.Errorf("logged %q", m)
				}
			}

			release()
			for _, p := range heavyPaths {
				if got := get(ctx, srv, key, p); got.err != nil || got.status != http.StatusOK {
					t.Errorf("GET %s once the pool is free: %+v, want 200", p, got)
				}
			}
		})
	}
}
