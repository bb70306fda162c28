package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// seenChange is a change as a reader saw it.
type seenChange struct {
	ID, RecordID string
	Version      int64
}

// TestChangesUnderConcurrentWriters: 20 writers create, patch and delete
// a few dozen records through one API replica for 10 s, on PostgreSQL,
// where transactions commit out of the order of their ids. One reader
// walks the feed by pages; another follows it live on a second replica
// with a maintained SSE client (tmaxmax/go-sse), whose connection is cut
// in the middle and which resumes with Last-Event-ID. At the end each saw
// every event of the module in the events table exactly once, both in the
// same order, each record's in version order.
func TestChangesUnderConcurrentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s of writes; skipped by -short")
	}
	db := storetest.NewDB(t, models.Postgres)
	storeA := db.Open(t, models.Options{MaxOpenConns: 16, AnnounceEvents: true})
	storeB := db.Open(t, models.Options{MaxOpenConns: 4})
	storeB.ListenEvents(slog.New(slog.DiscardHandler))
	e := newEnvOn(t, storeA, withLimiter(unlimited{}))
	replica := replicaOf(t, e, storeB, withLimiter(unlimited{}))
	mod := e.createModule("orders", changeFields...)
	start := e.changes(mod, "after=latest").NextCursor

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The live reader, on the other replica, through connections the
	// test can cut.
	var (
		connsMu sync.Mutex
		conns   []net.Conn
	)
	dialer := &net.Dialer{}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			connsMu.Lock()
			conns = append(conns, c)
			connsMu.Unlock()
		}
		return c, err
	}}}
	var (
		liveMu     sync.Mutex
		live       []seenChange
		reconnects atomic.Int64
	)
	sseClient := &sse.Client{
		HTTPClient: hc,
		Backoff:    sse.Backoff{InitialInterval: 50 * time.Millisecond, MaxInterval: 500 * time.Millisecond},
		OnRetry:    func(error, time.Duration) { reconnects.Add(1) },
	}
	req, err := http.NewRequestWithContext(ctx, "GET", replica.srv.URL+"/api/modules/"+mod+"/changes?after="+start, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.admin)
	conn := sseClient.NewConnection(req)
	var liveErr error
	conn.SubscribeToAll(func(ev sse.Event) {
		var body struct {
			ID     string `json:"id"`
			Record struct {
				ID string `json:"id"`
			} `json:"record"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &body); err != nil {
			liveErr = fmt.Errorf("event %q: %w", ev.Data, err)
			return
		}
		liveMu.Lock()
		live = append(live, seenChange{ID: body.ID, RecordID: body.Record.ID})
		liveMu.Unlock()
	})
	liveDone := make(chan error, 1)
	go func() { liveDone <- conn.Connect() }()

	// The paging reader.
	var paged []seenChange
	cursor := start
	page := func() (int, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/api/modules/"+mod+"/changes?limit=1000&after="+cursor, nil)
		req.Header.Set("Authorization", "Bearer "+e.admin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		var p struct {
			Data []struct {
				ID     string `json:"id"`
				Record struct {
					ID string `json:"id"`
				} `json:"record"`
			} `json:"data"`
			NextCursor string `json:"next_cursor"`
		}
		if res.StatusCode != 200 {
			return 0, fmt.Errorf("page: %d", res.StatusCode)
		}
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
			return 0, err
		}
		for _, c := range p.Data {
			paged = append(paged, seenChange{ID: c.ID, RecordID: c.Record.ID})
		}
		cursor = p.NextCursor
		return len(p.Data), nil
	}

	// The writers.
	var (
		poolMu sync.Mutex
		pool   []string
		writes atomic.Int64
		failed atomic.Int64
	)
	post := func(method, path string, body any) (int, []byte) {
		var rd *bytes.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, e.srv.URL+path, rd)
		req.Header.Set("Authorization", "Bearer "+e.admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		return res.StatusCode, b.Bytes()
	}
	deadline := time.Now().Add(10 * time.Second)
	var writers sync.WaitGroup
	for w := range 20 {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for time.Now().Before(deadline) {
				poolMu.Lock()
				var id string
				if len(pool) >= 12 && rng.IntN(4) > 0 {
					id = pool[rng.IntN(len(pool))]
				}
				poolMu.Unlock()
				var status int
				switch {
				case id == "":
					var b []byte
					status, b = post("POST", "/api/modules/"+mod+"/records", map[string]any{"fields": map[string]any{"title": "w" + strconv.Itoa(w), "qty": rng.IntN(100)}})
					var r struct{ ID string }
					if json.Unmarshal(b, &r) == nil && r.ID != "" {
						poolMu.Lock()
						pool = append(pool, r.ID)
						poolMu.Unlock()
					}
				case rng.IntN(10) == 0:
					status, _ = post("DELETE", "/api/modules/"+mod+"/records/"+id, nil)
					poolMu.Lock()
					pool = slices.DeleteFunc(pool, func(x string) bool { return x == id })
					poolMu.Unlock()
				default:
					patch := map[string]any{"qty": rng.IntN(100)}
					if rng.IntN(3) == 0 {
						patch["stage"] = []string{"open", "done"}[rng.IntN(2)]
					}
					status, _ = post("PATCH", "/api/modules/"+mod+"/records/"+id, map[string]any{"fields": patch})
				}
				writes.Add(1)
				// A write to a record deleted meanwhile answers 404.
				if status != 200 && status != 201 && status != 404 {
					failed.Add(1)
				}
			}
		})
	}

	// Midway, the live reader's connection is cut; the pager reads on.
	cut := time.AfterFunc(5*time.Second, func() {
		connsMu.Lock()
		defer connsMu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	defer cut.Stop()
	for time.Now().Before(deadline) {
		if _, err := page(); err != nil {
			t.Fatal(err)
		}
	}
	writers.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d writes failed", n, writes.Load())
	}

	rows := db.Rows(t, "SELECT id, record_id, record_version FROM events WHERE module_id = ? ORDER BY txid, seq", mod)
	want := make([]seenChange, len(rows))
	for i, r := range rows {
		v, _ := strconv.ParseInt(r["record_version"], 10, 64)
		want[i] = seenChange{ID: r["id"], RecordID: r["record_id"], Version: v}
	}
	storetest.Eventually(t, 30*time.Second, "the pager caught up", func() bool {
		if _, err := page(); err != nil {
			t.Fatal(err)
		}
		return len(paged) >= len(want)
	})
	storetest.Eventually(t, 30*time.Second, "the live reader caught up", func() bool {
		liveMu.Lock()
		defer liveMu.Unlock()
		return len(live) >= len(want)
	})
	cancel()
	<-liveDone
	if liveErr != nil {
		t.Fatal(liveErr)
	}
	if reconnects.Load() == 0 {
		t.Error("the live reader's connection was never cut")
	}
	t.Logf("%d writes, %d events, %d reconnects of the live reader", writes.Load(), len(want), reconnects.Load())

	versions := map[string]int64{}
	for _, w := range want {
		versions[w.ID] = w.Version
	}
	for name, got := range map[string][]seenChange{"pages": paged, "live": live} {
		checkChangesOnce(t, name, got, want, versions)
	}
	if !slices.EqualFunc(paged, live, func(a, b seenChange) bool { return a.ID == b.ID }) {
		t.Error("the pager and the live reader saw the changes in different orders")
	}
}

// checkChangesOnce checks that a reader saw every wanted event exactly
// once, each record's in version order.
func checkChangesOnce(t *testing.T, name string, got, want []seenChange, versions map[string]int64) {
	t.Helper()
	seen := map[string]int{}
	last := map[string]int64{}
	for _, c := range got {
		seen[c.ID]++
		v, ok := versions[c.ID]
		if !ok {
			t.Errorf("%s: event %s is not the module's", name, c.ID)
			continue
		}
		if v < last[c.RecordID] {
			t.Errorf("%s: record %s's event of version %d after one of version %d", name, c.RecordID, v, last[c.RecordID])
		}
		last[c.RecordID] = v
	}
	missing, doubled := 0, 0
	for _, w := range want {
		switch seen[w.ID] {
		case 0:
			missing++
		case 1:
		default:
			doubled++
		}
	}
	if missing > 0 || doubled > 0 || len(got) != len(want) {
		t.Errorf("%s: %d events seen for %d in the table: %d missing, %d seen more than once", name, len(got), len(want), missing, doubled)
	}
}
