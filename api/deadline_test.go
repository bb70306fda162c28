package api_test

// The heavy reads' pool and deadline (deadline.go) against a real store on
// PostgreSQL. A tenant's heavy reads are held the way long reads would
// hold them: the test locks the tables they read, so that each read waits
// on a connection of the store's heavy-read pool, and the pool fills. On
// SQLite a reader never waits for a lock, so there the store's own test
// (models' TestHeavyReadsOwnPool) takes the pool's connections itself.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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

// hangGuard is how long a test waits for a call that must complete before
// it calls the call hung; no test expects to come near it.
const hangGuard = 30 * time.Second

// logBuffer is a log destination safe for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// messages returns the logged lines' levels and messages.
func (b *logBuffer) messages(t *testing.T) []string {
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
func heavyAPI(t *testing.T, s *models.Store, deadline time.Duration) (*httptest.Server, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	srv := api.New(api.Deps{
		Store: s, Limiter: ratelimit.NewMemory(nil), Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewJSONHandler(logs, nil)), HeavyReadTimeout: deadline,
	})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs, logs
}

// tenantWithRecord creates a tenant with a module holding one record.
func tenantWithRecord(t *testing.T, s *models.Store, name string) (secret string, m *models.Module, r *models.Record) {
	t.Helper()
	ctx := context.Background()
	tenant, _, secret, err := s.CreateTenant(ctx, name, 100000)
	if err != nil {
		t.Fatal(err)
	}
	fields := []models.Field{{Name: "n", Type: models.TypeInteger}}
	slug, title := "things", "Things"
	m, err = s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &title, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	r, err = s.CreateRecord(ctx, m, map[string]any{"n": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return secret, m, r
}

// heavyTables are the tables that heavyPaths read and that no other
// tenant's module list or record read touches.
const heavyTables = "webhook_endpoints, endpoint_stats_hours, webhook_deliveries, access_logs"

// lockHeavyTables locks heavyTables in db, in a transaction of the test's
// own, until release is called (or the test ends): heavy reads then wait
// on the heavy pool's connections, as they would behind long-running ones.
// It returns the test's handle on db, for heavyReadsWaiting.
func lockHeavyTables(t *testing.T, db *storetest.DB) (h *sql.DB, release func()) {
	t.Helper()
	ctx := context.Background()
	h = db.SQL(t)
	tx, err := h.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { tx.Rollback() }) }
	t.Cleanup(release)
	if _, err := tx.ExecContext(ctx, "LOCK TABLE "+heavyTables+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatalf("lock the heavy reads' tables: %v", err)
	}
	return h, release
}

// heavyReadsWaiting returns how many statements wait for the test's
// schema's locked tables: the heavy reads holding a connection each.
func heavyReadsWaiting(t *testing.T, h *sql.DB) int {
	t.Helper()
	var n int
	err := h.QueryRow(`SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		WHERE NOT l.granted AND c.relnamespace = to_regnamespace(current_schema())`).Scan(&n)
	if err != nil {
		t.Fatalf("count the reads waiting for a lock: %v", err)
	}
	return n
}

// untilHeavyReadsWaiting polls until n heavy reads wait for the locked
// tables.
func untilHeavyReadsWaiting(t *testing.T, h *sql.DB, n int) {
	t.Helper()
	storetest.Eventually(t, hangGuard, fmt.Sprintf("%d heavy reads waiting", n), func() bool {
		return heavyReadsWaiting(t, h) == n
	})
}

// getAs sends GET path with key under ctx, bounded by hangGuard.
func getAs(ctx context.Context, srv *httptest.Server, key, path string) answer {
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
// are held (two waiting on every connection of the heavy pool, two for a
// connection), tenant B's module list and record read are answered; A's
// reads are answered once they can go on.
func TestHeavyReadsDoNotQueueOtherTenants(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t, models.Postgres)
	s := db.Open(t, models.Options{})
	keyA, _, _ := tenantWithRecord(t, s, "a")
	keyB, m, rec := tenantWithRecord(t, s, "b")
	srv, _ := heavyAPI(t, s, hangGuard)
	h, release := lockHeavyTables(t, db)

	ctx := context.Background()
	results := make(chan answer, len(heavyPaths))
	for _, p := range heavyPaths {
		go func() { results <- getAs(ctx, srv, keyA, p) }()
	}
	untilHeavyReadsWaiting(t, h, models.DefaultHeavyReadConns)

	for _, p := range []string{"/api/admin/modules", "/api/modules/" + m.ID + "/records/" + rec.ID} {
		if got := getAs(ctx, srv, keyB, p); got.err != nil || got.status != http.StatusOK {
			t.Errorf("tenant B's GET %s while A's heavy reads are held: %+v, want 200", p, got)
		}
	}
	if n := len(results); n != 0 {
		t.Fatalf("%d of A's heavy reads answered while the heavy pool was held", n)
	}
	if n := heavyReadsWaiting(t, h); n != models.DefaultHeavyReadConns {
		t.Errorf("%d heavy reads waiting after B's reads, want %d: a heavy read ran outside the heavy pool", n, models.DefaultHeavyReadConns)
	}

	release()
	for range heavyPaths {
		if got := <-results; got.err != nil || got.status != http.StatusOK {
			t.Errorf("tenant A's heavy read once the tables are free: %+v, want 200", got)
		}
	}
}

// TestHeavyReadPastDeadline: a heavy read that cannot finish within its
// deadline answers 503 unavailable with Retry-After, logged as a read past
// its deadline and not as a database outage; the next one, once it can go
// on, is answered. A client that goes away while its read waits is logged
// as such, neither unavailable nor an internal error.
func TestHeavyReadPastDeadline(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t, models.Postgres)
	s := db.Open(t, models.Options{})
	key, _, _ := tenantWithRecord(t, s, "a")
	srv, logs := heavyAPI(t, s, 200*time.Millisecond)
	h, release := lockHeavyTables(t, db)
	ctx := context.Background()

	for _, p := range heavyPaths {
		got := getAs(ctx, srv, key, p)
		if got.err != nil || got.status != http.StatusServiceUnavailable || got.code != "unavailable" || got.retryAfter != "2" {
			t.Errorf("GET %s past its deadline: %+v, want 503 unavailable, Retry-After 2", p, got)
		}
	}
	slow := "WARN heavy read past its deadline; call refused with 503"
	if got := logs.messages(t); len(got) == 0 || got[0] != slow {
		t.Errorf("log %q, want first %q", got, slow)
	}

	// A client that goes away while its read waits.
	untilHeavyReadsWaiting(t, h, 0)
	clientCtx, cancel := context.WithCancel(ctx)
	gone := make(chan answer, 1)
	go func() { gone <- getAs(clientCtx, srv, key, heavyPaths[2]) }()
	untilHeavyReadsWaiting(t, h, 1)
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
		if got := getAs(ctx, srv, key, p); got.err != nil || got.status != http.StatusOK {
			t.Errorf("GET %s once the tables are free: %+v, want 200", p, got)
		}
	}
}
