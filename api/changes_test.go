package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// changeFields are the fields of the change feed tests' module.
var changeFields = []map[string]any{
	{"name": "title", "type": "string"},
	{"name": "qty", "type": "integer"},
	{"name": "stage", "type": "status", "states": []string{"open", "done"}, "initial": "open"},
}

// withChanges sets the change feed's options.
func withChanges(o api.ChangesOptions) envOption { return func(d *api.Deps) { d.Changes = o } }

// changePage is a page of the change feed.
type changePage struct {
	Data []struct {
		Cursor string `json:"cursor"`
		ID     string `json:"id"`
		Event  string `json:"event"`
		Record struct {
			ID      string         `json:"id"`
			Version int64          `json:"version"`
			Fields  map[string]any `json:"fields"`
		} `json:"record"`
	} `json:"data"`
	NextCursor string `json:"next_cursor"`
}

func (p changePage) events() []string {
	var out []string
	for _, c := range p.Data {
		out = append(out, c.Event)
	}
	return out
}

// changes reads one page of the module's change feed.
func (e *env) changes(moduleID, query string) changePage {
	e.t.Helper()
	var p changePage
	e.call("GET", "/api/modules/"+moduleID+"/changes?"+query, e.admin, nil).want(200).decode(&p)
	return p
}

// waitChanges waits until the module's feed lists n changes. On
// PostgreSQL a read lists a change only once no transaction on the server
// that began before it is open, and tests in parallel hold some open;
// once listed, a change stays where it is.
func (e *env) waitChanges(moduleID string, n int) {
	e.t.Helper()
	storetest.Eventually(e.t, 30*time.Second, fmt.Sprintf("%d changes listed", n), func() bool {
		return len(e.changes(moduleID, "limit=1000").Data) >= n
	})
}

// sseEvent is an event read off a stream; ID alone for an id-only block.
type sseEvent struct {
	ID, Type, Data string
}

// sseStream reads a change stream.
type sseStream struct {
	t      *testing.T
	res    *http.Response
	events chan sseEvent
	cancel context.CancelFunc
	// ended is closed when the server ended the stream.
	ended chan struct{}
	// comments counts the comment lines read.
	comments atomic.Int64
}

// openStream opens a change stream, waits for its headers and reads it.
func (e *env) openStream(moduleID, key, query, lastID string) (*sseStream, *resp) {
	e.t.Helper()
	return e.startStream(moduleID, key, query, lastID, true)
}

// startStream opens a change stream; it is read only when read is set.
func (e *env) startStream(moduleID, key, query, lastID string, read bool) (*sseStream, *resp) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/api/modules/"+moduleID+"/changes?"+query, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		defer cancel()
		defer res.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(res.Body).WriteTo(&b)
		return nil, &resp{t: e.t, status: res.StatusCode, header: res.Header, body: []byte(b.String())}
	}
	s := &sseStream{t: e.t, res: res, events: make(chan sseEvent, 1<<16), cancel: cancel, ended: make(chan struct{})}
	e.t.Cleanup(s.close)
	if read {
		go s.read()
	}
	return s, nil
}

func (s *sseStream) close() {
	s.cancel()
	s.res.Body.Close()
}

// read parses the stream into events: comments are skipped, and a block
// with an id and no data is passed on as an id alone.
func (s *sseStream) read() {
	defer close(s.ended)
	sc := bufio.NewScanner(s.res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	seen := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if seen {
				s.events <- ev
			}
			ev, seen = sseEvent{}, false
		case strings.HasPrefix(line, ":"):
			s.comments.Add(1)
		default:
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			seen = true
			switch name {
			case "id":
				ev.ID = value
			case "event":
				ev.Type = value
			case "data":
				ev.Data = value
			}
		}
	}
}

// next returns the next event with data, failing the test after within.
func (s *sseStream) next(within time.Duration) sseEvent {
	s.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-s.events:
			if ev.Data != "" {
				return ev
			}
		case <-deadline:
			s.t.Fatalf("no event within %s", within)
		}
	}
}

// TestChangesPage: a module's changes by pages in commit order, a
// record's in version order; after=latest starts at the end; next_cursor
// comes back unchanged at the end; types and field filters with operators
// select changes and still move next_cursor; bad types, cursors and
// parameters answer 400.
func TestChangesPage(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", changeFields...)
		start := e.changes(mod, "after=latest")
		if len(start.Data) != 0 || start.NextCursor == "" {
			t.Fatalf("after=latest of an empty module: %+v, want no data and a cursor", start)
		}
		a := e.createRecord(mod, map[string]any{"title": "a", "qty": 3})
		b := e.createRecord(mod, map[string]any{"title": "b", "qty": 9})
		e.call("PATCH", "/api/modules/"+mod+"/records/"+a, e.admin, map[string]any{"fields": map[string]any{"stage": "done"}}).want(200)
		e.call("DELETE", "/api/modules/"+mod+"/records/"+b, e.admin, nil).want(200)
		want := []string{"record_created", "record_created", "record_updated", "status_change", "record_deleted"}
		e.waitChanges(mod, len(want))

		all := e.changes(mod, "")
		if !slices.Equal(all.events(), want) {
			t.Errorf("changes %q, want %q", all.events(), want)
		}
		if got := e.changes(mod, "after="+start.NextCursor); !slices.Equal(got.events(), want) {
			t.Errorf("changes after the start's latest %q, want %q", got.events(), want)
		}
		var paged []string
		cursor := ""
		for range 10 {
			p := e.changes(mod, "limit=2&after="+cursor)
			paged = append(paged, p.events()...)
			if p.NextCursor == cursor {
				break
			}
			cursor = p.NextCursor
		}
		if !slices.Equal(paged, want) {
			t.Errorf("by pages of 2: %q, want %q", paged, want)
		}
		if end := e.changes(mod, "after=latest"); len(end.Data) != 0 || end.NextCursor != cursor {
			t.Errorf("after=latest: %d changes, cursor %q; want none and the end's %q", len(end.Data), end.NextCursor, cursor)
		}

		deleted := e.changes(mod, "types=record_deleted,status_change")
		if got := deleted.events(); !slices.Equal(got, []string{"status_change", "record_deleted"}) {
			t.Errorf("types=record_deleted,status_change: %q", got)
		}
		if deleted.NextCursor != cursor {
			t.Errorf("a filtered page's next_cursor %q, want the last change's %q", deleted.NextCursor, cursor)
		}
		big := e.changes(mod, url.Values{"filter[qty][gt]": {"5"}}.Encode())
		if got := big.events(); !slices.Equal(got, []string{"record_created", "record_deleted"}) || big.Data[0].Record.ID != b {
			t.Errorf("filter[qty][gt]=5: %q, want b's creation and deletion", got)
		}
		if got := e.changes(mod, url.Values{"filter[stage]": {"done"}, "types": {"status_change"}}.Encode()); len(got.Data) != 1 {
			t.Errorf("filter[stage]=done&types=status_change: %q, want the one status change", got.events())
		}

		for _, c := range []struct{ query, code string }{
			{"types=record_snapshot", "invalid_request"},
			{"types=record_created,nope", "invalid_request"},
			{"after=bm9wZQ", "invalid_request"},
			{"after=" + cursor + "!", "invalid_request"},
			{"after=" + cursor[1:], "invalid_request"},
			{"limit=0", "invalid_request"},
			{"limit=1001", "invalid_request"},
			{"filter[nope]=1", "invalid_request"},
			{"filter[qty][prefix]=1", "invalid_request"},
			{"sort=created_at", "invalid_request"},
		} {
			r := e.call("GET", "/api/modules/"+mod+"/changes?"+c.query, e.admin, nil)
			if r.status != 400 || r.errorCode() != c.code {
				t.Errorf("%s: %d %s, want 400 %s", c.query, r.status, r.body, c.code)
			}
		}
	})
}

// TestChangesAccess: the records routes' rules: another tenant's module
// or a missing one is 404, a key without read on it 403.
func TestChangesAccess(t *testing.T) {
	e := newEnv(t, models.SQLite)
	mod := e.createModule("orders", changeFields...)
	other := e.createModule("other", changeFields...)
	_, writer := e.createKey(map[string]any{"name": "w", "permissions": map[string]any{mod: []string{"write"}, other: []string{"read"}}})
	if r := e.call("GET", "/api/modules/"+mod+"/changes", writer, nil); r.status != 403 {
		t.Errorf("without read: %d, want 403", r.status)
	}
	if _, r := e.openStream(mod, writer, "", ""); r == nil || r.status != 403 {
		t.Errorf("a stream without read: %v, want 403", r)
	}
	if r := e.call("GET", "/api/modules/mod_nope/changes", e.admin, nil); r.status != 404 {
		t.Errorf("a missing module: %d, want 404", r.status)
	}
	e.call("GET", "/api/modules/"+other+"/changes", writer, nil).want(200)
}

// TestChangesExpired: once retention purged changes after a cursor, the
// cursor answers 410 cursor_expired, saying how to start over; the start
// and the end still answer.
func TestChangesExpired(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		ctx := context.Background()
		mod := e.createModule("orders", changeFields...)
		e.createRecord(mod, map[string]any{"title": "a"})
		e.waitChanges(mod, 1)
		first := e.changes(mod, "")
		e.createRecord(mod, map[string]any{"title": "b"})
		e.createRecord(mod, map[string]any{"title": "c"})
		e.waitChanges(mod, 3)
		all := e.changes(mod, "")
		var ids []string
		for _, c := range all.Data[:2] {
			ids = append(ids, c.ID)
		}
		if err := e.store.MarkDispatched(ctx, ids); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Purge(ctx, models.PurgeEvents, time.Now().Add(time.Hour), 100); err != nil {
			t.Fatal(err)
		}
		r := e.call("GET", "/api/modules/"+mod+"/changes?after="+first.NextCursor, e.admin, nil).want(410)
		body := wantErrorBody(t, r, "cursor_expired")
		if msg, _ := body["message"].(string); !strings.Contains(msg, "after=latest") || !strings.Contains(msg, "without after") {
			t.Errorf("message %q does not say how to start over", msg)
		}
		if _, r := e.openStream(mod, e.admin, "", first.NextCursor); r == nil || r.status != 410 {
			t.Errorf("a stream resumed from the expired cursor: %v, want 410", r)
		}
		if kept := e.changes(mod, ""); len(kept.Data) != 1 {
			t.Errorf("from the start: %d changes, want the one kept", len(kept.Data))
		}
		e.changes(mod, "after="+all.Data[1].Cursor)
		e.changes(mod, "after=latest")
	})
}

// TestChangesStream: a stream follows changes live from after=latest, an
// event per change with its cursor as id and its body as data; filters
// apply; Last-Event-ID resumes after its cursor.
func TestChangesStream(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", changeFields...)
		e.createRecord(mod, map[string]any{"title": "before"})
		e.waitChanges(mod, 1)
		s, r := e.openStream(mod, e.admin, "after=latest", "")
		if r != nil {
			t.Fatalf("stream: %d %s", r.status, r.body)
		}
		big, _ := e.openStream(mod, e.admin, url.Values{"filter[qty][gte]": {"5"}, "types": {"record_created"}}.Encode(), "")
		a := e.createRecord(mod, map[string]any{"title": "a", "qty": 1})
		e.call("PATCH", "/api/modules/"+mod+"/records/"+a, e.admin, map[string]any{"fields": map[string]any{"qty": 7}}).want(200)
		b := e.createRecord(mod, map[string]any{"title": "b", "qty": 8})

		var got []string
		var ids []string
		for range 3 {
			ev := s.next(10 * time.Second)
			var body struct {
				Event  string `json:"event"`
				Record struct {
					ID string `json:"id"`
				} `json:"record"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &body); err != nil {
				t.Fatalf("data %q: %v", ev.Data, err)
			}
			if body.Event != ev.Type {
				t.Errorf("event: %q, data's event %q", ev.Type, body.Event)
			}
			got = append(got, ev.Type+" "+body.Record.ID)
			ids = append(ids, ev.ID)
		}
		if want := []string{"record_created " + a, "record_updated " + a, "record_created " + b}; !slices.Equal(got, want) {
			t.Errorf("streamed %q, want %q", got, want)
		}
		page := e.changes(mod, "after=latest")
		if ids[2] != page.NextCursor {
			t.Errorf("the last event's id %q, want the feed's end %q", ids[2], page.NextCursor)
		}
		if ev := big.next(10 * time.Second); !strings.Contains(ev.Data, b) || ev.Type != "record_created" {
			t.Errorf("the filtered stream got %s %s, want b's creation", ev.Type, ev.Data)
		}

		resumed, _ := e.openStream(mod, e.admin, "after=latest", ids[0])
		if ev := resumed.next(10 * time.Second); ev.ID != ids[1] {
			t.Errorf("resumed after %q: first id %q, want %q", ids[0], ev.ID, ids[1])
		}
	})
}

// TestChangesStreamBounds: streams past the per-key bound, then past the
// per-tenant one, answer 429 rate_limited with Retry-After; closing one
// makes room.
func TestChangesStreamBounds(t *testing.T) {
	e := newEnv(t, models.SQLite, withChanges(api.ChangesOptions{StreamsPerKey: 2, StreamsPerTenant: 3}))
	mod := e.createModule("orders", changeFields...)
	_, other := e.createKey(map[string]any{"name": "r", "permissions": map[string]any{mod: []string{"read"}}})
	first, _ := e.openStream(mod, e.admin, "", "")
	e.openStream(mod, e.admin, "", "")
	_, r := e.openStream(mod, e.admin, "", "")
	if r == nil || r.status != 429 {
		t.Fatalf("a third stream of a key: %v, want 429", r)
	}
	body := wantErrorBody(t, r, "rate_limited")
	if msg, _ := body["message"].(string); !strings.Contains(msg, "per key") || r.header.Get("Retry-After") == "" {
		t.Errorf("429 %q, Retry-After %q: want the bound named and a Retry-After", msg, r.header.Get("Retry-After"))
	}
	e.openStream(mod, other, "", "")
	if _, r := e.openStream(mod, other, "", ""); r == nil || r.status != 429 || !strings.Contains(string(r.body), "per tenant") {
		t.Fatalf("a fourth stream of the tenant: %v, want 429 naming the tenant's bound", r)
	}
	first.close()
	storetest.Eventually(t, 5*time.Second, "the closed stream's room", func() bool { return e.server.Streams() == 2 })
	if _, r := e.openStream(mod, other, "", ""); r != nil {
		t.Errorf("after a stream closed: %d %s, want a stream", r.status, r.body)
	}
	// Pages are not streams.
	e.changes(mod, "")
}

// TestChangesSlowReader: a reader that stops reading is cut off once a
// write to it blocks past the write timeout, while every write of the
// module goes on: the hub holds a bounded ring, never a queue per reader.
func TestChangesSlowReader(t *testing.T) {
	const ring = 16
	e := newEnv(t, models.SQLite, withChanges(api.ChangesOptions{WriteTimeout: 200 * time.Millisecond, Ring: ring}))
	mod := e.createModule("orders", changeFields...)
	// The reader reads nothing: its socket buffers fill up.
	e.startStream(mod, e.admin, "after=latest", "", false)
	big := strings.Repeat("x", 60_000)
	const writes = 300
	for i := range writes {
		e.call("POST", "/api/modules/"+mod+"/records", e.admin, map[string]any{"fields": map[string]any{"title": fmt.Sprint(i)}, "custom_data": map[string]any{"pad": big}}).want(201)
	}
	storetest.Eventually(t, 30*time.Second, "the slow reader cut off", func() bool { return e.server.Streams() == 0 })
	if m := e.call("GET", "/metrics", "", nil).want(200); !strings.Contains(string(m.body), "recordhub_change_streams_cut_total 1") {
		t.Error("the cut is not counted in recordhub_change_streams_cut_total")
	}
	// Nothing was lost to anyone: the feed still has every change.
	n := 0
	cursor := ""
	for {
		p := e.changes(mod, "limit=1000&after="+cursor)
		n += len(p.Data)
		if p.NextCursor == cursor {
			break
		}
		cursor = p.NextCursor
	}
	if n != writes {
		t.Errorf("%d changes in the feed, want %d", n, writes)
	}
}

// TestChangesEndStreams: ending the streams (a graceful shutdown) ends an
// open stream at once, and a stream resumed from the last id it got
// misses nothing.
func TestChangesEndStreams(t *testing.T) {
	e := newEnv(t, models.SQLite)
	mod := e.createModule("orders", changeFields...)
	s, _ := e.openStream(mod, e.admin, "after=latest", "")
	e.createRecord(mod, map[string]any{"title": "a"})
	last := s.next(10 * time.Second)
	e.server.EndStreams()
	select {
	case <-s.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
	}
	if _, r := e.openStream(mod, e.admin, "", last.ID); r == nil || r.status != 503 {
		t.Errorf("a stream after the end: %v, want 503", r)
	}
	b := e.createRecord(mod, map[string]any{"title": "b"})
	e.waitChanges(mod, 2)
	if got := e.changes(mod, "after="+last.ID); len(got.Data) != 1 || got.Data[0].Record.ID != b {
		t.Errorf("after the last id streamed: %q, want b's creation", got.events())
	}
}

// TestChangesHeartbeat: a silent stream gets a heartbeat comment, and
// changes its filters leave out move its last event id on, with an id
// that dispatches no event.
func TestChangesHeartbeat(t *testing.T) {
	e := newEnv(t, models.SQLite, withChanges(api.ChangesOptions{Heartbeat: 50 * time.Millisecond}))
	mod := e.createModule("orders", changeFields...)
	s, _ := e.openStream(mod, e.admin, "types=record_deleted&after=latest", "")
	storetest.Eventually(t, 10*time.Second, "a heartbeat", func() bool { return s.comments.Load() >= 2 })
	e.createRecord(mod, map[string]any{"title": "left out"})
	end := e.changes(mod, "after=latest").NextCursor
	select {
	case ev := <-s.events:
		if ev.ID != end || ev.Data != "" || ev.Type != "" {
			t.Errorf("after a change the filter left out: %+v, want only the id %q", ev, end)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no id after a change the filter left out")
	}
}

// TestChangesKeyedCreates: a create sent with an Idempotency-Key, which
// stores its answer in its own statements, is in the change feed like any
// other, in commit order among plain ones; its replay adds nothing.
func TestChangesKeyedCreates(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", changeFields...)
		path := "/api/modules/" + mod + "/records"
		a := e.createRecord(mod, map[string]any{"title": "a"})
		b := e.call("POST", path, e.admin, map[string]any{"fields": map[string]any{"title": "b"}}, idem("feed-b")...).want(201).json()["id"]
		e.call("POST", path, e.admin, map[string]any{"fields": map[string]any{"title": "b"}}, idem("feed-b")...).want(201)
		c := e.createRecord(mod, map[string]any{"title": "c"})
		e.waitChanges(mod, 3)
		var got []any
		for _, ch := range e.changes(mod, "").Data {
			got = append(got, ch.Record.ID)
		}
		if want := []any{a, b, c}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("changes of records %v, want %v", got, want)
		}
	})
}
