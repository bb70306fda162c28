package api_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/accesslog"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// logVisibleWithin is how soon a logged call must show in the admin API.
const logVisibleWithin = 2 * time.Second

// logRow is an access-log row as the admin API answers it.
type logRow struct {
	ID         string    `json:"id"`
	TenantID   *string   `json:"tenant_id"`
	KeyID      *string   `json:"key_id"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Route      string    `json:"route"`
	ModuleID   *string   `json:"module_id"`
	Status     int       `json:"status"`
	DurationMS float64   `json:"duration_ms"`
	IP         string    `json:"ip"`
	UserAgent  string    `json:"user_agent"`
	RequestID  string    `json:"request_id"`
	CreatedAt  time.Time `json:"created_at"`
}

type logPage struct {
	Data  []logRow `json:"data"`
	Total int      `json:"total"`
}

// accessLogs answers GET /api/admin/access-logs with the query.
func (e *env) accessLogs(q url.Values) logPage {
	e.t.Helper()
	var p logPage
	e.call("GET", "/api/admin/access-logs?"+q.Encode(), e.admin, nil).want(200).decode(&p)
	return p
}

// waitForLogs polls the admin API until the query has total rows, for as
// long as a logged call may take to show up.
func (e *env) waitForLogs(q url.Values, total int) logPage {
	e.t.Helper()
	var p logPage
	storetest.Eventually(e.t, logVisibleWithin, fmt.Sprintf("%d access-log rows for %s", total, q.Encode()), func() bool {
		p = e.accessLogs(q)
		return p.Total >= total
	})
	if p.Total != total {
		e.t.Fatalf("%d access-log rows for %s, want %d", p.Total, q.Encode(), total)
	}
	return p
}

// summary is what a test compares of a row.
type logSummary struct {
	Method, Route, Path string
	Status              int
	RequestID           string
	KeyID, TenantID     string
}

func summarize(rows []logRow) []logSummary {
	out := make([]logSummary, len(rows))
	for i, r := range rows {
		out[i] = logSummary{Method: r.Method, Route: r.Route, Path: r.Path, Status: r.Status, RequestID: r.RequestID, KeyID: deref(r.KeyID), TenantID: deref(r.TenantID)}
	}
	return out
}

func TestAccessLogRecordsEveryCall(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		clock := storetest.NewClock()
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{Now: clock.Now}))
		mod := e.createModule("things")
		keyID, key := e.createKey(map[string]any{"permissions": map[string]any{mod: []string{"read", "write"}}})
		limitedID, limited := e.createKey(map[string]any{"rate_limit_per_minute": 1})
		expiringID, expiring := e.createKey(map[string]any{"expires_at": clock.Now().Add(time.Hour)})
		revokedID, revoked := e.createKey(map[string]any{})
		e.call("DELETE", "/api/admin/keys/"+revokedID, e.admin, nil).want(200)
		clock.Advance(time.Hour + time.Second)

		run := limiterPrefix()[5:17] // random hex, so that request ids are this run's
		calls := []struct {
			method, path, key string
			body              any
			status            int
			route             string
			keyID, tenantID   string
		}{
			{"GET", "/api/modules", key, nil, 200, "/api/modules", keyID, e.tenantID},
			{"GET", "/api/admin/keys", key, nil, 403, "/api/admin/keys", keyID, e.tenantID},
			{"GET", "/api/modules/mod_missing/records", key, nil, 404, "/api/modules/:id/records", keyID, e.tenantID},
			{"POST", "/api/modules/" + mod + "/records", key, map[string]any{"fields": map[string]any{"nope": 1}}, 422, "/api/modules/:id/records", keyID, e.tenantID},
			{"GET", "/api/modules", limited, nil, 200, "/api/modules", limitedID, e.tenantID},
			{"GET", "/api/modules", limited, nil, 429, "/api/modules", limitedID, e.tenantID},
			{"GET", "/api/modules", expiring, nil, 401, "/api/modules", expiringID, e.tenantID},
			{"GET", "/api/modules", revoked, nil, 401, "/api/modules", revokedID, e.tenantID},
			{"GET", "/api/modules", models.NewAPIKeySecret(), nil, 401, "/api/modules", "", ""},
			{"GET", "/api/admin/keys", "", nil, 401, "/api/admin/keys", "", ""},
		}
		want := map[string][]logSummary{} // by key id, newest first
		var unattributed []string
		for i, c := range calls {
			rid := fmt.Sprintf("test-%s-%d", run, i)
			e.call(c.method, c.path, c.key, c.body, "X-Request-Id", rid, "User-Agent", "recordhub-tests/1").want(c.status)
			row := logSummary{Method: c.method, Route: c.route, Path: c.path, Status: c.status, RequestID: rid, KeyID: c.keyID, TenantID: c.tenantID}
			if c.keyID == "" {
				unattributed = append(unattributed, rid)
				continue
			}
			want[c.keyID] = append([]logSummary{row}, want[c.keyID]...)
		}

		for id, rows := range want {
			page := e.waitForLogs(url.Values{"key_id": {id}}, len(rows))
			if diff := cmp.Diff(rows, summarize(page.Data)); diff != "" {
				t.Errorf("access logs of key %s, newest first (-want +got):\n%s", id, diff)
			}
			for _, r := range page.Data {
				if r.IP != "127.0.0.1" || r.UserAgent != "recordhub-tests/1" || r.DurationMS < 0 || r.CreatedAt.IsZero() || r.ID == "" {
					t.Errorf("row %+v: want ip 127.0.0.1, our user agent, a duration, a time and an id", r)
				}
			}
		}
		page := e.accessLogs(url.Values{"key_id": {keyID}, "method": {"POST"}})
		if len(page.Data) != 1 || deref(page.Data[0].ModuleID) != mod {
			t.Errorf("the POST to module %s is logged as %+v, want that module id", mod, page.Data)
		}

		// Calls without a known key belong to no tenant: the admin API
		// cannot show them, the table has them with null tenant and key.
		sqlDB := db.SQL(t)
		for _, rid := range unattributed {
			var (
				tenant, key sql.NullString
				status      int
			)
			storetest.Eventually(t, logVisibleWithin, "row of request "+rid, func() bool {
				err := sqlDB.QueryRow(db.Rebind("SELECT tenant_id, key_id, status FROM access_logs WHERE request_id = ?"), rid).Scan(&tenant, &key, &status)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					t.Fatal(err)
				}
				return err == nil
			})
			if tenant.Valid || key.Valid || status != 401 {
				t.Errorf("request %s logged with tenant %v, key %v, status %d; want null, null, 401", rid, tenant, key, status)
			}
			if p := e.accessLogs(url.Values{"status": {"401"}}); containsRequest(p.Data, rid) {
				t.Errorf("request %s without a key is listed to a tenant", rid)
			}
		}
	})
}

func containsRequest(rows []logRow, rid string) bool {
	for _, r := range rows {
		if r.RequestID == rid {
			return true
		}
	}
	return false
}

func TestAccessLogFiltersAndPages(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("things", map[string]any{"name": "title", "type": "string"})
		keyID, key := e.createKey(map[string]any{"permissions": map[string]any{mod: []string{"read", "write"}}})
		otherID, other := e.createKey(map[string]any{})

		e.call("GET", "/api/modules", key, nil).want(200)
		e.call("POST", "/api/modules/"+mod+"/records", key, map[string]any{"fields": map[string]any{"title": "a"}}).want(201)
		e.call("GET", "/api/modules/"+mod+"/records", key, nil).want(200)
		e.call("POST", "/api/modules/"+mod+"/records", key, map[string]any{"fields": map[string]any{"title": 1}}).want(422)
		e.call("GET", "/api/modules/mod_missing/records", key, nil).want(404)
		e.call("GET", "/api/modules", key, nil).want(200)
		e.call("GET", "/api/modules", other, nil).want(200)

		all := e.waitForLogs(url.Values{"key_id": {keyID}}, 6).Data
		e.waitForLogs(url.Values{"key_id": {otherID}}, 1)
		for i := 1; i < len(all); i++ {
			if all[i].CreatedAt.After(all[i-1].CreatedAt) {
				t.Errorf("row %d (%v) is newer than row %d (%v): want newest first", i, all[i].CreatedAt, i-1, all[i-1].CreatedAt)
			}
		}
		statuses := func(rows []logRow) []int {
			var out []int
			for _, r := range rows {
				out = append(out, r.Status)
			}
			return out
		}
		if diff := cmp.Diff([]int{200, 404, 422, 200, 201, 200}, statuses(all)); diff != "" {
			t.Fatalf("statuses, newest first (-want +got):\n%s", diff)
		}
		at := func(i int) string { return all[i].CreatedAt.Format(time.RFC3339Nano) }

		tests := []struct {
			name  string
			query url.Values
			want  []logRow
		}{
			{"status", url.Values{"key_id": {keyID}, "status": {"200"}}, []logRow{all[0], all[3], all[5]}},
			{"method", url.Values{"key_id": {keyID}, "method": {"POST"}}, []logRow{all[2], all[4]}},
			{"method and status", url.Values{"key_id": {keyID}, "method": {"POST"}, "status": {"422"}}, []logRow{all[2]}},
			{"no match", url.Values{"key_id": {keyID}, "status": {"500"}}, nil},
			{"other key", url.Values{"key_id": {otherID}}, nil /* checked below */},
			{"from (inclusive)", url.Values{"key_id": {keyID}, "from": {at(3)}}, all[:4]},
			{"to (exclusive)", url.Values{"key_id": {keyID}, "to": {at(3)}}, all[4:]},
			{"from and to", url.Values{"key_id": {keyID}, "from": {at(4)}, "to": {at(1)}}, all[2:5]},
			{"from in another zone", url.Values{"key_id": {keyID}, "from": {all[3].CreatedAt.In(time.FixedZone("x", -5*3600)).Format(time.RFC3339Nano)}}, all[:4]},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := e.on(t)
				got := e.accessLogs(tt.query)
				if tt.name == "other key" {
					if len(got.Data) != 1 || deref(got.Data[0].KeyID) != otherID {
						t.Errorf("rows of the other key: %+v", got.Data)
					}
					return
				}
				if got.Total != len(tt.want) {
					t.Errorf("total %d, want %d", got.Total, len(tt.want))
				}
				if diff := cmp.Diff(ids(tt.want), ids(got.Data)); diff != "" {
					t.Errorf("rows (-want +got):\n%s", diff)
				}
			})
		}

		t.Run("pages", func(t *testing.T) {
			e := e.on(t)
			var paged []logRow
			for page := 1; page <= 4; page++ {
				p := e.accessLogs(url.Values{"key_id": {keyID}, "limit": {"4"}, "page": {strconv.Itoa(page)}})
				if p.Total != 6 {
					t.Errorf("page %d: total %d, want 6", page, p.Total)
				}
				if want := min(4, max(0, 6-(page-1)*4)); len(p.Data) != want {
					t.Errorf("page %d: %d rows, want %d", page, len(p.Data), want)
				}
				paged = append(paged, p.Data...)
			}
			if diff := cmp.Diff(ids(all), ids(paged)); diff != "" {
				t.Errorf("pages put together (-all +pages):\n%s", diff)
			}
		})

		t.Run("bad queries", func(t *testing.T) {
			e := e.on(t)
			for _, q := range []string{"status=abc", "status=99", "from=yesterday", "to=2030-13-01", "limit=0", "limit=101", "page=0"} {
				wantErrorBody(t, e.call("GET", "/api/admin/access-logs?"+q, e.admin, nil).want(400), "invalid_request")
			}
		})
	})
}

type usageBucket struct {
	BucketStart time.Time `json:"bucket_start"`
	Requests    int64     `json:"requests"`
	Errors      int64     `json:"errors"`
	RateLimited int64     `json:"rate_limited"`
}

type usageAnswer struct {
	Data    []usageBucket `json:"data"`
	Total   int           `json:"total"`
	Summary struct {
		Requests    int64     `json:"requests"`
		Errors      int64     `json:"errors"`
		RateLimited int64     `json:"rate_limited"`
		From        time.Time `json:"from"`
		To          time.Time `json:"to"`
		Granularity string    `json:"granularity"`
	} `json:"summary"`
}

type counts struct{ Requests, Errors, RateLimited int64 }

func TestKeyUsageCounts(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("things")
		id, key := e.createKey(map[string]any{"rate_limit_per_minute": 4, "permissions": map[string]any{mod: []string{"read"}}})
		_, other := e.createKey(map[string]any{})

		e.call("GET", "/api/modules", key, nil).want(200)
		e.call("GET", "/api/modules/"+mod+"/records", key, nil).want(200)
		e.call("GET", "/api/modules/mod_missing/records", key, nil).want(404)
		e.call("GET", "/api/admin/keys", key, nil).want(403)
		e.call("GET", "/api/modules", key, nil).want(429)
		e.call("GET", "/api/modules", key, nil).want(429)
		e.call("GET", "/api/modules", other, nil).want(200)
		e.call("DELETE", "/api/admin/keys/"+id, e.admin, nil).want(200)
		e.call("GET", "/api/modules", key, nil).want(401)
		want := counts{Requests: 7, Errors: 3, RateLimited: 2}

		storetest.Eventually(t, logVisibleWithin, "last_used_at of the used key", func() bool {
			return e.call("GET", "/api/admin/keys/"+id, e.admin, nil).want(200).json()["last_used_at"] != nil
		})

		for _, gran := range []struct {
			name string
			unit time.Duration
		}{{"hour", time.Hour}, {"day", 24 * time.Hour}} {
			t.Run(gran.name, func(t *testing.T) {
				e := e.on(t)
				var u usageAnswer
				storetest.Eventually(t, logVisibleWithin, "usage to count every call", func() bool {
					e.call("GET", "/api/admin/keys/"+id+"/usage?granularity="+gran.name, e.admin, nil).want(200).decode(&u)
					return u.Summary.Requests >= want.Requests
				})
				if diff := cmp.Diff(want, counts{u.Summary.Requests, u.Summary.Errors, u.Summary.RateLimited}); diff != "" {
					t.Errorf("summary (-want +got):\n%s", diff)
				}
				if u.Summary.Granularity != gran.name {
					t.Errorf("granularity %q, want %q", u.Summary.Granularity, gran.name)
				}
				// The calls took moments, but may straddle a bucket boundary.
				if len(u.Data) < 1 || len(u.Data) > 2 || u.Total != len(u.Data) {
					t.Fatalf("%d buckets, total %d: want 1 (2 across a boundary)", len(u.Data), u.Total)
				}
				var sum counts
				for i, b := range u.Data {
					if !b.BucketStart.Equal(b.BucketStart.UTC().Truncate(gran.unit)) {
						t.Errorf("bucket starts at %v, not on a UTC %s", b.BucketStart, gran.name)
					}
					if i > 0 && !b.BucketStart.After(u.Data[i-1].BucketStart) {
						t.Errorf("buckets not oldest first: %v after %v", b.BucketStart, u.Data[i-1].BucketStart)
					}
					if b.BucketStart.Before(u.Summary.From) || !b.BucketStart.Before(u.Summary.To) {
						t.Errorf("bucket %v outside [%v, %v)", b.BucketStart, u.Summary.From, u.Summary.To)
					}
					sum.Requests += b.Requests
					sum.Errors += b.Errors
					sum.RateLimited += b.RateLimited
				}
				if diff := cmp.Diff(want, sum); diff != "" {
					t.Errorf("buckets added up (-want +got):\n%s", diff)
				}
			})
		}

		t.Run("window without calls", func(t *testing.T) {
			e := e.on(t)
			q := url.Values{"granularity": {"hour"}, "from": {time.Now().Add(-72 * time.Hour).Format(time.RFC3339)}, "to": {time.Now().Add(-48 * time.Hour).Format(time.RFC3339)}}
			var u usageAnswer
			e.call("GET", "/api/admin/keys/"+id+"/usage?"+q.Encode(), e.admin, nil).want(200).decode(&u)
			if len(u.Data) != 0 || u.Total != 0 || u.Summary.Requests != 0 {
				t.Errorf("usage two days ago: %+v, want none", u)
			}
		})

		t.Run("bad queries", func(t *testing.T) {
			e := e.on(t)
			now := time.Now().UTC()
			for _, q := range []url.Values{
				{"granularity": {"week"}},
				{"granularity": {"HOUR"}},
				{"from": {"yesterday"}},
				{"from": {now.Format(time.RFC3339)}, "to": {now.Add(-time.Hour).Format(time.RFC3339)}},
			} {
				wantErrorBody(t, e.call("GET", "/api/admin/keys/"+id+"/usage?"+q.Encode(), e.admin, nil).want(400), "invalid_request")
			}
		})
	})
}

// blockingStore is an access-log store whose writes wait until released.
type blockingStore struct {
	entered chan struct{}
	release chan struct{}
	insertedLogs
}

// insertedLogs are the rows a fake store took, under its lock.
type insertedLogs struct {
	mu   sync.Mutex
	rows []models.AccessLog
}

// ids returns the ids of the rows taken, in order.
func (l *insertedLogs) ids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.rows {
		out = append(out, r.ID)
	}
	return out
}

func newBlockingStore() *blockingStore {
	return &blockingStore{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (s *blockingStore) InsertAccessLogs(ctx context.Context, logs []models.AccessLog) error {
	s.entered <- struct{}{}
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, logs...)
	return nil
}

// recordingStore keeps every batch it is given.
type recordingStore struct {
	mu      sync.Mutex
	batches [][]models.AccessLog
}

func (s *recordingStore) InsertAccessLogs(ctx context.Context, logs []models.AccessLog) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, append([]models.AccessLog(nil), logs...))
	return nil
}

func logRowN(i int) models.AccessLog {
	return models.AccessLog{ID: fmt.Sprintf("log_%05d", i), Method: "GET", Path: "/api/modules", Route: "/api/modules", Status: 200, CreatedAt: time.Now()}
}

// closeWriter closes w, failing the test if that does not end.
func closeWriter(t *testing.T, w *accesslog.Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestAccessLogWriterFlushesOnClose(t *testing.T) {
	store := &recordingStore{}
	// An hour between flushes: only Close can write these rows in time.
	w := accesslog.New(store, accesslog.Options{BatchSize: 100, Interval: time.Hour})
	go w.Run(context.Background())
	var want []string
	for i := range 1000 {
		l := logRowN(i)
		if !w.Enqueue(l) {
			t.Fatalf("row %d dropped with room in the queue", i)
		}
		want = append(want, l.ID)
	}
	closeWriter(t, w)

	var got []string
	store.mu.Lock()
	for _, b := range store.batches {
		if len(b) > 100 {
			t.Errorf("a batch of %d rows, want at most 100", len(b))
		}
		for _, l := range b {
			got = append(got, l.ID)
		}
	}
	store.mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows written by Close (-want +got):\n%s", diff)
	}
}

// TestAccessLogWriterFlush: Flush returns once every row enqueued before
// it is written, long before the batch interval, and the Writer goes on
// taking rows; after Close it returns at once.
func TestAccessLogWriterFlush(t *testing.T) {
	store := &recordingStore{}
	w := accesslog.New(store, accesslog.Options{BatchSize: 100, Interval: time.Hour})
	go w.Run(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	written := func() (ids []string) {
		store.mu.Lock()
		defer store.mu.Unlock()
		for _, b := range store.batches {
			for _, l := range b {
				ids = append(ids, l.ID)
			}
		}
		return ids
	}
	var want []string
	for round := range 3 {
		for i := range 250 {
			l := logRowN(round*1000 + i)
			if !w.Enqueue(l) {
				t.Fatalf("row %s dropped with room in the queue", l.ID)
			}
			want = append(want, l.ID)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if diff := cmp.Diff(want, written()); diff != "" {
			t.Fatalf("rows written after Flush %d (-want +got):\n%s", round+1, diff)
		}
	}
	closeWriter(t, w)
	if err := w.Flush(ctx); err != nil {
		t.Errorf("Flush after Close: %v", err)
	}
}

// TestAccessLogWriterFlushesOnCloseToDB checks the same against the real
// tables: every row queued before Close is in the database after it.
func TestAccessLogWriterFlushesOnCloseToDB(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		store := storetest.NewDB(t, d).Open(t, models.Options{})
		tenant, admin, _, err := store.CreateTenant(context.Background(), "t", 600)
		if err != nil {
			t.Fatal(err)
		}
		w := accesslog.New(store, accesslog.Options{BatchSize: 64, Interval: time.Hour})
		go w.Run(context.Background())
		for i := range 300 {
			l := logRowN(i)
			l.ID = models.NewID(models.PrefixAccessLog)
			l.TenantID, l.KeyID = &tenant.ID, &admin.ID
			w.Enqueue(l)
		}
		closeWriter(t, w)
		_, total, err := store.ListAccessLogs(context.Background(), tenant.ID, models.AccessLogQuery{Page: models.Page{Page: 1, Limit: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if total != 300 {
			t.Errorf("%d rows in the database after Close, want 300", total)
		}
	})
}

func TestAccessLogWriterDropsWhenFull(t *testing.T) {
	store := newBlockingStore()
	var drops atomic.Int64
	w := accesslog.New(store, accesslog.Options{QueueSize: 2, BatchSize: 1, Interval: time.Hour, OnDrop: func() { drops.Add(1) }})
	go w.Run(context.Background())

	// The first row is taken and its write hangs; two more fill the queue.
	if !w.Enqueue(logRowN(0)) {
		t.Fatal("first row dropped")
	}
	<-store.entered
	for i := 1; i <= 2; i++ {
		if !w.Enqueue(logRowN(i)) {
			t.Fatalf("row %d dropped with room in the queue", i)
		}
	}
	// Depth counts the row being written too: it is not written yet.
	if got := w.Depth(); got != 3 {
		t.Errorf("depth %d, want 3 (one being written, two queued)", got)
	}

	// A full queue refuses at once rather than waiting for the store. The
	// deadline only turns a hang into a failure.
	done := make(chan []bool)
	go func() {
		var accepted []bool
		for i := 3; i <= 5; i++ {
			accepted = append(accepted, w.Enqueue(logRowN(i)))
		}
		done <- accepted
	}()
	select {
	case accepted := <-done:
		if diff := cmp.Diff([]bool{false, false, false}, accepted); diff != "" {
			t.Errorf("Enqueue on a full queue (-want +got):\n%s", diff)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Enqueue blocked on a full queue")
	}
	if got := drops.Load(); got != 3 {
		t.Errorf("OnDrop called %d times, want 3", got)
	}

	close(store.release)
	closeWriter(t, w)
	if diff := cmp.Diff([]string{"log_00000", "log_00001", "log_00002"}, store.ids()); diff != "" {
		t.Errorf("rows written (-want +got):\n%s", diff)
	}
	if got := drops.Load(); got != 3 {
		t.Errorf("OnDrop called %d times in all, want 3", got)
	}
}

// TestRequestsPassWhenLogQueueFull serves requests while the access-log
// store hangs and the queue is full: logging must not fail or hold them.
func TestRequestsPassWhenLogQueueFull(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		store := newBlockingStore()
		var drops atomic.Int64
		w := accesslog.New(store, accesslog.Options{QueueSize: 2, BatchSize: 1, Interval: time.Hour, OnDrop: func() { drops.Add(1) }})
		go w.Run(context.Background())
		t.Cleanup(func() {
			close(store.release)
			closeWriter(t, w)
		})
		e := newEnv(t, d, func(deps *api.Deps) { deps.Logs = w })
		for range 10 {
			e.call("GET", "/api/admin/keys", e.admin, nil).want(200)
		}
		if drops.Load() == 0 {
			t.Errorf("no row dropped with a hung store and a queue of 2")
		}
	})
}

// A path or query holding NUL or invalid UTF-8 names nothing: it answers
// 404 or 400, never reaches PostgreSQL (which refuses such text), and its
// access-log row does not cost the rows batched with it.
func TestBadBytesInURLs(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		cases := []struct {
			method, path, key string
			status            int
			message           string
		}{
			{"GET", "/api/admin/modules/a%00b", e.admin, 404, "not found"},
			{"GET", "/api/modules/a%ffb/records", e.admin, 404, "not found"},
			{"GET", "/api/admin/access-logs?key_id=%00", e.admin, 400, "query parameters must be valid UTF-8 without NUL"},
			{"GET", "/api/modules?x%ff=1", e.admin, 400, "query parameters must be valid UTF-8 without NUL"},
			{"POST", "/api/webhooks/a%00/b", "", 404, "no inbound webhook at this URL"},
			{"POST", "/api/webhooks/orders/%ff%00", "", 404, "no inbound webhook at this URL"},
		}
		var ids []string
		for _, c := range cases {
			r := e.call(c.method, c.path, c.key, `{}`)
			var body struct{ Message string }
			r.decode(&body)
			if r.status != c.status || body.Message != c.message {
				t.Errorf("%s %s: %d %s, want %d %q", c.method, c.path, r.status, r.body, c.status, c.message)
			}
			if c.key != "" {
				ids = append(ids, r.header.Get("X-Request-Id"))
			}
		}
		ids = append(ids, e.call("GET", "/api/admin/modules", e.admin, nil).want(200).header.Get("X-Request-Id"))
		storetest.Eventually(t, logVisibleWithin, "every call in the access log", func() bool {
			page := e.accessLogs(url.Values{"limit": {"100"}})
			for _, id := range ids {
				if !containsRequest(page.Data, id) {
					return false
				}
			}
			return true
		})
	})
}

// An inbound webhook's token is a credential: whatever route a request to
// an inbound URL matched, or none, its access-log row keeps only the
// token's first characters.
func TestInboundTokensStayOutOfAccessLogs(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		h := e.configureInbound("orders", orderConfig(nil))
		tok := h.token
		kept := "/api/webhooks/orders/" + tok[:6] + "…"
		var everyByte strings.Builder
		for i := range len(tok) {
			fmt.Fprintf(&everyByte, "%%%02X", tok[i])
		}
		cases := []struct {
			method, path string
			logged       string // the path logged; "" when not logged
		}{
			{"POST", h.path, kept},
			{"GET", h.path, kept},
			{"PUT", h.path, kept},
			{"DELETE", h.path, kept},
			{"GET", h.path + "/", kept},
			{"POST", h.path + "/", kept}, // redirected to h.path, which is logged
			{"POST", h.path + "/x/y", kept},
			{"POST", h.path + ";x", kept},
			{"POST", h.path + "?token=" + tok, kept},
			{"POST", "/api/webhooks/orders//" + tok, kept},
			{"POST", "/api//webhooks/orders/" + tok, kept},
			{"POST", "/api/webhooks/orders/" + everyByte.String(), kept},
			{"GET", "/api/webhooks/orders%2F" + tok, kept},
			{"POST", "/api/webhooks%252Forders%252F" + tok, kept},
			{"POST", "/api/WEBHOOKS/orders/" + tok, "/api/WEBHOOKS/orders/" + tok[:6] + "…"},
			{"POST", "/api/./webhooks/orders/" + tok, "/api/./webhooks/orders/" + tok[:6] + "…"},
			{"POST", "/api/webhooks/Orders/" + tok, "/api/webhooks/Orders…"},
			{"POST", "/api/webhooks/" + tok, "/api/webhooks/" + tok[:6] + "…"},
			{"POST", "//api/webhooks/orders/" + tok, ""},
		}
		run := limiterPrefix()[5:17]
		want := map[string]string{}
		for i, c := range cases {
			rid := fmt.Sprintf("tok-%s-%d", run, i)
			e.call(c.method, c.path, "", `{"order":{"id":"T"}}`, "X-Request-Id", rid)
			if c.logged != "" {
				want[rid] = c.logged
			}
		}
		// A last call that is logged, to know the others had their turn.
		sentinel := e.call("GET", "/api/admin/modules", e.admin, nil).want(200).header.Get("X-Request-Id")
		e.flushLogs()

		sqlDB := db.SQL(t)
		got := map[string]string{}
		storetest.Eventually(t, logVisibleWithin, "every call in the access log", func() bool {
			rows, err := sqlDB.Query("SELECT request_id, path, route FROM access_logs")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			clear(got)
			for rows.Next() {
				var rid, path, route string
				if err := rows.Scan(&rid, &path, &route); err != nil {
					t.Fatal(err)
				}
				got[rid] = path
				if strings.Contains(path, tok[6:]) || strings.Contains(route, tok[6:]) {
					t.Errorf("request %s logged with the token: path %q, route %q", rid, path, route)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			_, done := got[sentinel]
			for rid := range want {
				_, ok := got[rid]
				done = done && ok
			}
			return done
		})
		for i, c := range cases {
			rid := fmt.Sprintf("tok-%s-%d", run, i)
			if path, ok := got[rid]; ok != (c.logged != "") || path != c.logged {
				t.Errorf("%s %s logged as %q (logged: %v), want %q", c.method, c.path, path, ok, c.logged)
			}
		}
	})
}

// failingStore refuses every batch while down, then keeps what it is given.
type failingStore struct {
	insertedLogs // its lock also guards down
	down         bool
}

func (s *failingStore) InsertAccessLogs(ctx context.Context, logs []models.AccessLog) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("database unavailable")
	}
	s.rows = append(s.rows, logs...)
	return nil
}

func (s *failingStore) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// TestAccessLogWriterKeepsNewestPastCap: rows the store refuses are kept
// up to MaxHeld; past it the oldest are dropped, counted and logged once
// per batch's worth, and the kept ones are written, in order, once the
// store takes them. No clock: the backoff is an hour, so only Flush tries.
func TestAccessLogWriterKeepsNewestPastCap(t *testing.T) {
	store := &failingStore{down: true}
	var drops atomic.Int64
	var logs logLines
	w := accesslog.New(store, accesslog.Options{
		BatchSize: 10, MaxHeld: 100, Interval: time.Hour, RetryMax: time.Hour,
		OnDrop: func() { drops.Add(1) }, Log: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	go w.Run(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var want []string
	for i := range 250 {
		l := logRowN(i)
		if !w.Enqueue(l) {
			t.Fatalf("row %d dropped with room in the queue", i)
		}
		if i >= 150 {
			want = append(want, l.ID)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.Depth(); got != 100 {
		t.Errorf("depth %d with the store down, want the 100 kept", got)
	}
	if got := drops.Load(); got != 150 {
		t.Errorf("%d rows dropped, want the 150 oldest", got)
	}
	var dropLines int
	for _, l := range logs.lines(t, "WARN") {
		if l.Msg == "access log rows dropped: too many kept while the database refuses them" {
			dropLines++
		}
	}
	if dropLines == 0 || dropLines > 1+150/10 {
		t.Errorf("%d WARN lines about 150 dropped rows, want at least one, at most one per batch's worth", dropLines)
	}

	store.setDown(false)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, store.ids()); diff != "" {
		t.Errorf("rows written once the store is back (-want +got):\n%s", diff)
	}
	if got := w.Depth(); got != 0 {
		t.Errorf("depth %d once written, want 0", got)
	}
	closeWriter(t, w)
	if errs := logs.lines(t, "ERROR"); len(errs) > 0 {
		t.Errorf("ERROR lines: %+v", errs)
	}
}

// TestAccessLogWriterThroughPostgresOutage writes through a PostgreSQL
// that goes away (a proxy in front of it, stopped with every connection it
// held) and comes back: the rows queued meanwhile are kept, tried again,
// and all arrive once it is back, each once, usage included.
func TestAccessLogWriterThroughPostgresOutage(t *testing.T) {
	db := storetest.NewDB(t, models.Postgres)
	proxy, via := storetest.NewProxy(t, db)
	store := via.Open(t, models.Options{})
	ctx := context.Background()
	tenant, admin, _, err := store.CreateTenant(ctx, "t", 600)
	if err != nil {
		t.Fatal(err)
	}
	var drops atomic.Int64
	var logs logLines
	w := accesslog.New(store, accesslog.Options{
		BatchSize: 50, Interval: 10 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		OnDrop: func() { drops.Add(1) }, Log: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	go w.Run(ctx)

	proxy.Stop()
	const n = 300
	for i := range n {
		l := logRowN(i)
		l.ID = models.NewID(models.PrefixAccessLog)
		l.TenantID, l.KeyID = &tenant.ID, &admin.ID
		if !w.Enqueue(l) {
			t.Fatalf("row %d dropped with room in the queue", i)
		}
	}
	flushCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Flush(flushCtx); err != nil {
		t.Fatal(err)
	}
	if got := w.Depth(); got != n {
		t.Errorf("depth %d with the database down, want all %d kept", got, n)
	}
	if len(logs.lines(t, "WARN")) == 0 {
		t.Error("no WARN line for the refused batch")
	}

	proxy.Start()
	direct := db.SQL(t)
	count := func(query string) int {
		t.Helper()
		var c sql.NullInt64
		if err := direct.QueryRow(query).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return int(c.Int64)
	}
	storetest.WhileProgressing(t, 30*time.Second, "the kept rows to reach the database", func() (int, bool) {
		c := count("SELECT count(*) FROM access_logs")
		return c, c >= n
	})
	closeWriter(t, w)
	if got := count("SELECT count(*) FROM access_logs"); got != n {
		t.Errorf("%d access-log rows, want %d", got, n)
	}
	if got := count("SELECT sum(requests) FROM key_usage"); got != n {
		t.Errorf("usage counts %d requests, want %d", got, n)
	}
	if got := drops.Load(); got != 0 {
		t.Errorf("%d rows dropped, want none", got)
	}
	if errs := logs.lines(t, "ERROR"); len(errs) > 0 {
		t.Errorf("ERROR lines: %+v", errs)
	}
}
