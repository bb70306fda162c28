package api_test

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// withLog gives the server a logger.
func withLog(l *slog.Logger) envOption { return func(d *api.Deps) { d.Log = l } }

// withoutAccessLogs sends access-log rows nowhere, so that the requests
// of the test are the only transactions the database sees.
func withoutAccessLogs() envOption { return func(d *api.Deps) { d.Logs = discardLogs{} } }

// logLine is one line of the server's log.
type logLine struct {
	Level, Msg      string
	RequestID       string `json:"request_id"`
	Error           string
	RefusedUnlogged int `json:"refused_unlogged"`
}

// wantUnavailable fails the test unless r is the answer to a call whose
// database cannot be reached: 503 unavailable, told to retry.
func wantUnavailable(t *testing.T, what string, r *resp) {
	t.Helper()
	if r.status != 503 || r.errorCode() != "unavailable" {
		t.Errorf("%s: %d %s, want 503 unavailable", what, r.status, r.body)
		return
	}
	if got := r.header.Get("Retry-After"); got != "2" {
		t.Errorf("%s: Retry-After %q, want 2", what, got)
	}
	if got := r.json()["message"]; got != "the database cannot be reached; retry later" {
		t.Errorf("%s: message %q", what, got)
	}
}

// rowCounts counts what a write leaves behind: records, their events (the
// outbox) and kept inbound calls.
func rowCounts(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"records", "events", "inbound_events"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

// untilCreated sends a record POST until it answers 201, within a
// deadline; any other answer on the way must be 503 unavailable (a pool
// may find a connection broken by the outage before it makes a new one).
func untilCreated(t *testing.T, e *env, moduleID string, fields map[string]any) {
	t.Helper()
	storetest.Eventually(t, 20*time.Second, "a record POST answering 201 once the database is back", func() bool {
		r := e.call("POST", "/api/modules/"+moduleID+"/records", e.admin, map[string]any{"fields": fields})
		if r.status == 201 {
			return true
		}
		wantUnavailable(t, "record POST once the database is back", r)
		return false
	})
}

// TestPostgresDownAnswersUnavailable stops the PostgreSQL the API uses
// (a proxy in front of it, closed with every connection it held): record
// writes and reads, admin calls, inbound webhooks and the key lookup that
// precedes them all answer 503 unavailable with Retry-After, quickly and
// never as a 500, leave nothing behind, and the API recovers when the
// database is back. Calls run under a client deadline: a hang fails them.
func TestPostgresDownAnswersUnavailable(t *testing.T) {
	db := storetest.NewDB(t, models.Postgres)
	proxy, via := storetest.NewProxy(t, db)
	var logs logLines
	clock := storetest.NewClock()
	e := newEnvOn(t, via.Open(t, models.Options{}), withoutAccessLogs(),
		withLog(slog.New(slog.NewJSONHandler(&logs, nil))), func(d *api.Deps) { d.Now = clock.Now })
	e.srv.Client().Timeout = 30 * time.Second
	notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
	kept := e.createRecord(notes, map[string]any{"title": "kept"})
	hook := e.configureInbound("orders", orderConfig(nil))
	direct := db.SQL(t)
	before := rowCounts(t, direct)

	calls := []struct {
		name, method, path, key string
		body                    any
	}{
		{"record POST", "POST", "/api/modules/" + notes + "/records", e.admin, map[string]any{"fields": map[string]any{"title": "refused"}}},
		{"record PATCH", "PATCH", "/api/modules/" + notes + "/records/" + kept, e.admin, map[string]any{"fields": map[string]any{"title": "refused"}}},
		{"record GET", "GET", "/api/modules/" + notes + "/records/" + kept, e.admin, nil},
		{"records list", "GET", "/api/modules/" + notes + "/records", e.admin, nil},
		{"admin GET", "GET", "/api/admin/keys", e.admin, nil},
		{"admin POST", "POST", "/api/admin/modules", e.admin, map[string]any{"slug": "later", "name": "Later", "fields": []any{}}},
		{"inbound webhook", "POST", hook.path, "", `{"order":{"id":"A-1","total":1}}`},
		{"key never looked up", "GET", "/api/modules", "rh_" + strings.Repeat("k", 43), nil},
	}
	refuseAll := func(t *testing.T) {
		for _, c := range calls {
			wantUnavailable(t, c.name, e.on(t).call(c.method, c.path, c.key, c.body))
		}
	}

	t.Run("server down", func(t *testing.T) {
		proxy.Stop()
		refuseAll(t)
		if diff := cmp.Diff(before, rowCounts(t, direct)); diff != "" {
			t.Errorf("refused calls left rows behind (-before +after):\n%s", diff)
		}
		// One WARN line a second, naming a refused call and its cause,
		// and then how many calls were refused without a line.
		clock.Advance(time.Second)
		wantUnavailable(t, "record GET a second later", e.on(t).call(calls[2].method, calls[2].path, calls[2].key, nil))
		warns := logs.lines(t, "WARN")
		if len(warns) != 2 {
			t.Fatalf("%d WARN lines for %d refused calls in two seconds, want 2: %+v", len(warns), len(calls)+1, warns)
		}
		for _, w := range warns {
			if w.Msg != "database unavailable; call refused with 503" || !strings.HasPrefix(w.RequestID, "req_") || w.Error == "" {
				t.Errorf("WARN line %+v: want the refusal with its request id and cause", w)
			}
		}
		if got := []int{warns[0].RefusedUnlogged, warns[1].RefusedUnlogged}; !cmp.Equal(got, []int{0, len(calls) - 1}) {
			t.Errorf("refused_unlogged %v, want [0 %d]", got, len(calls)-1)
		}
		proxy.Start()
		untilCreated(t, e.on(t), notes, map[string]any{"title": "after restart"})
	})

	t.Run("server that never answers", func(t *testing.T) {
		// Connections are accepted and never answered: only the connect
		// timeout ends the wait.
		proxy.BlackHole()
		for _, c := range calls {
			if c.name == "record POST" || c.name == "record GET" { // each waits the timeout out
				wantUnavailable(t, c.name, e.on(t).call(c.method, c.path, c.key, c.body))
			}
		}
		proxy.Start()
		untilCreated(t, e.on(t), notes, map[string]any{"title": "after black hole"})
	})

	t.Run("connection lost under a write", func(t *testing.T) {
		// The connection breaks as the record's INSERT (its parameters)
		// is sent: the server never gets it.
		was := rowCounts(t, direct)
		proxy.CutOn([]byte("cut-under-insert"))
		r := e.on(t).call("POST", "/api/modules/"+notes+"/records", e.admin, map[string]any{"fields": map[string]any{"title": "cut-under-insert"}})
		wantUnavailable(t, "record POST whose INSERT was cut", r)
		if diff := cmp.Diff(was, rowCounts(t, direct)); diff != "" {
			t.Errorf("the cut write left rows behind (-before +after):\n%s", diff)
		}
		untilCreated(t, e.on(t), notes, map[string]any{"title": "cut-under-insert"})
	})

	t.Run("connection lost before commit", func(t *testing.T) {
		// A PATCH runs in a transaction; the connection breaks as it
		// commits: the server never sees the COMMIT and rolls back.
		was := rowCounts(t, direct)
		proxy.CutOn([]byte("commit"))
		r := e.on(t).call("PATCH", "/api/modules/"+notes+"/records/"+kept, e.admin, map[string]any{"fields": map[string]any{"title": "cut"}})
		wantUnavailable(t, "record PATCH whose commit was cut", r)
		if diff := cmp.Diff(was, rowCounts(t, direct)); diff != "" {
			t.Errorf("the cut transaction left rows behind (-before +after):\n%s", diff)
		}
		got := e.on(t).call("GET", "/api/modules/"+notes+"/records/"+kept, e.admin, nil).want(200).json()
		if got["version"] != 1.0 || got["fields"].(map[string]any)["title"] != "kept" {
			t.Errorf("record after the cut PATCH: %v, want version 1 titled kept", got)
		}
	})

	got := rowCounts(t, direct)
	want := map[string]int{"records": before["records"] + 3, "events": before["events"] + 3, "inbound_events": before["inbound_events"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows after the outages (-want +got):\n%s", diff)
	}
	if errs := logs.lines(t, "ERROR"); len(errs) > 0 {
		t.Errorf("an unreachable database logged ERROR lines: %+v", errs)
	}
}

// TestSQLiteLockedAnswersUnavailable: SQLite is a file, never down, but
// another process can hold its write lock (a CLI command, a backup, an
// operator's sqlite3 shell) past the busy timeout. Writes then answer 503
// unavailable with Retry-After and leave nothing behind; reads go on from
// the WAL; writes succeed again once the lock is released.
func TestSQLiteLockedAnswersUnavailable(t *testing.T) {
	db := storetest.NewDB(t, models.SQLite)
	var logs logLines
	e := newEnvOn(t, db.Open(t, models.Options{BusyTimeout: 100 * time.Millisecond}), withoutAccessLogs(),
		withLog(slog.New(slog.NewJSONHandler(&logs, nil))))
	e.srv.Client().Timeout = 30 * time.Second
	notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
	kept := e.createRecord(notes, map[string]any{"title": "kept"})
	hook := e.configureInbound("orders", orderConfig(nil))
	other := db.SQL(t) // another process's connection to the same file
	before := rowCounts(t, other)

	ctx := context.Background()
	lock, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	wantUnavailable(t, "record POST", e.call("POST", "/api/modules/"+notes+"/records", e.admin, map[string]any{"fields": map[string]any{"title": "refused"}}))
	wantUnavailable(t, "record PATCH", e.call("PATCH", "/api/modules/"+notes+"/records/"+kept, e.admin, map[string]any{"fields": map[string]any{"title": "refused"}}))
	wantUnavailable(t, "admin POST", e.call("POST", "/api/admin/modules", e.admin, map[string]any{"slug": "later", "name": "Later", "fields": []any{}}))
	wantUnavailable(t, "inbound webhook", e.call("POST", hook.path, "", `{"order":{"id":"A-1","total":1}}`))
	e.call("GET", "/api/modules/"+notes+"/records/"+kept, e.admin, nil).want(200)
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, rowCounts(t, other)); diff != "" {
		t.Errorf("refused calls left rows behind (-before +after):\n%s", diff)
	}
	e.call("POST", "/api/modules/"+notes+"/records", e.admin, map[string]any{"fields": map[string]any{"title": "after"}}).want(201)
	if errs := logs.lines(t, "ERROR"); len(errs) > 0 {
		t.Errorf("a locked database logged ERROR lines: %+v", errs)
	}
	if warns := logs.lines(t, "WARN"); len(warns) == 0 || !strings.Contains(warns[0].Error, "database is locked") {
		t.Errorf("WARN lines %+v: want the refusal with SQLite's cause", warns)
	}
}
