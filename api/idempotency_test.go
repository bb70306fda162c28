package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// idem is the header pair of an Idempotency-Key, for env.call.
func idem(key string) []string { return []string{"Idempotency-Key", key} }

// wantReplay checks that r is first's answer again, byte for byte, marked
// as replayed.
func wantReplay(t *testing.T, r, first *resp) {
	t.Helper()
	if r.status != first.status || !bytes.Equal(r.body, first.body) {
		t.Errorf("replay %d %s, want the first answer %d %s", r.status, r.body, first.status, first.body)
	}
	for _, h := range []string{"Content-Type", "ETag", "Location"} {
		if r.header.Get(h) != first.header.Get(h) {
			t.Errorf("replay's %s %q, want the first answer's %q", h, r.header.Get(h), first.header.Get(h))
		}
	}
	if got := r.header.Get("Idempotent-Replayed"); got != "true" {
		t.Errorf("replay's Idempotent-Replayed %q, want true", got)
	}
}

// count returns how many rows query finds.
func count(t *testing.T, db *storetest.DB, query string, args ...any) int {
	t.Helper()
	return len(db.Rows(t, query, args...))
}

// TestIdempotentCreate: a record POST sent twice with one key makes one
// record and one event; the second is answered the first's 201 again,
// byte for byte, marked replayed, also by a new server on the database
// (a restart, another replica). The first answer is not marked.
func TestIdempotentCreate(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		path := "/api/modules/" + notes + "/records"
		body := map[string]any{"fields": map[string]any{"title": "once"}}

		first := e.call("POST", path, e.admin, body, idem("create-1")...).want(201)
		if got := first.header.Get("Idempotent-Replayed"); got != "" {
			t.Errorf("first answer marked replayed: %q", got)
		}
		wantReplay(t, e.call("POST", path, e.admin, body, idem("create-1")...), first)

		restarted := replicaOf(t, e, db.Open(t, models.Options{}))
		wantReplay(t, restarted.call("POST", path, e.admin, body, idem("create-1")...), first)

		id := first.json()["id"].(string)
		if n := count(t, db, "SELECT id FROM records WHERE module_id = ?", notes); n != 1 {
			t.Errorf("%d records, want 1", n)
		}
		if n := count(t, db, "SELECT id FROM events WHERE record_id = ?", id); n != 1 {
			t.Errorf("%d events, want 1", n)
		}
		// Without the header nothing changes: each POST creates.
		e.call("POST", path, e.admin, body).want(201)
		e.call("POST", path, e.admin, body).want(201)
		if n := count(t, db, "SELECT id FROM records WHERE module_id = ?", notes); n != 3 {
			t.Errorf("%d records after two POSTs without a key, want 3", n)
		}
	})
}

// TestIdempotentConcurrent: many requests with one key at once make one
// record and one event; every answer is the 201 or its replay, or 409
// conflict with Retry-After: 1 for those that came while the first ran.
func TestIdempotentConcurrent(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{MaxOpenConns: 8}))
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		path := "/api/modules/" + notes + "/records"
		body := map[string]any{"fields": map[string]any{"title": "raced"}}

		const n = 12
		answers := make([]*resp, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				answers[i] = e.call("POST", path, e.admin, body, idem("race")...)
			})
		}
		close(start)
		wg.Wait()

		var created []*resp
		conflicts := 0
		for _, r := range answers {
			switch {
			case r.status == 201 && r.header.Get("Idempotent-Replayed") == "":
				created = append(created, r)
			case r.status == 201:
			case r.status == 409:
				wantErrorBody(t, r, "conflict")
				if got := r.header.Get("Retry-After"); got != "1" {
					t.Errorf("409's Retry-After %q, want 1", got)
				}
				conflicts++
			default:
				t.Errorf("answer %d %s, want 201 or 409", r.status, r.body)
			}
		}
		if len(created) != 1 {
			t.Fatalf("%d first answers, want 1", len(created))
		}
		for _, r := range answers {
			if r.status == 201 && r != created[0] {
				wantReplay(t, r, created[0])
			}
		}
		if got := count(t, db, "SELECT id FROM records WHERE module_id = ?", notes); got != 1 {
			t.Errorf("%d records, want 1", got)
		}
		if got := count(t, db, "SELECT id FROM events WHERE record_id = ?", created[0].json()["id"]); got != 1 {
			t.Errorf("%d events, want 1", got)
		}
		t.Logf("%d conflicts, %d replays", conflicts, n-1-conflicts)
		// A retry after the race is a replay.
		wantReplay(t, e.call("POST", path, e.admin, body, idem("race")...), created[0])
	})
}

// TestIdempotentHeldKey: a key held by a request still running is refused
// at once with 409 conflict and Retry-After: 1, whatever the route; once
// released, the request runs.
func TestIdempotentHeldKey(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		store := db.Open(t, models.Options{})
		e := newEnvOn(t, store)
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		k, err := store.Authenticate(t.Context(), e.admin)
		if err != nil {
			t.Fatal(err)
		}
		release, _, err := store.ClaimIdempotencyKey(t.Context(), k.ID, "held", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r := e.call("POST", "/api/modules/"+notes+"/records", e.admin, map[string]any{"fields": map[string]any{}}, idem("held")...).want(409)
		wantErrorBody(t, r, "conflict")
		if got := r.header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After %q, want 1", got)
		}
		release()
		e.call("POST", "/api/modules/"+notes+"/records", e.admin, map[string]any{"fields": map[string]any{}}, idem("held")...).want(201)
	})
}

// TestIdempotentCommitLost: the connection breaks once PostgreSQL has
// the statement that commits a keyed write and before its answer reaches
// the API. The API cannot know whether the change is there and answers
// 503; the retry with the key is answered the write's first answer, and
// the change is made once. A record create commits with its one
// statement, whose arguments carry the key (models.KeyedCreate); a patch
// with the COMMIT of its transaction.
func TestIdempotentCommitLost(t *testing.T) {
	db := storetest.NewDB(t, models.Postgres)
	proxy, via := storetest.NewProxy(t, db)
	e := newEnvOn(t, via.Open(t, models.Options{}), withoutAccessLogs())
	notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
	path := "/api/modules/" + notes + "/records"

	t.Run("create", func(t *testing.T) {
		body := map[string]any{"fields": map[string]any{"title": "kept"}}
		proxy.CutAfterSent([]byte("lost-create-answer"))
		r := e.call("POST", path, e.admin, body, idem("lost-create-answer")...)
		wantErrorBody(t, r.want(503), "unavailable")
		// The client's side is cut before the server has the statement:
		// the server may still be running it.
		h := db.SQL(t)
		storetest.Eventually(t, 10*time.Second, "the cut create committed", func() bool {
			var n int
			if err := h.QueryRow(db.Rebind("SELECT COUNT(*) FROM records WHERE module_id = ?"), notes).Scan(&n); err != nil {
				t.Error(err)
			}
			return n > 0
		})
		rows := db.Rows(t, "SELECT id FROM records WHERE module_id = ?", notes)
		if len(rows) != 1 {
			t.Fatalf("%d records after the lost commit answer, want the 1 committed", len(rows))
		}
		retry := e.call("POST", path, e.admin, body, idem("lost-create-answer")...).want(201)
		if retry.header.Get("Idempotent-Replayed") != "true" || retry.json()["id"] != rows[0]["id"] {
			t.Errorf("retry %s (replayed %q), want the committed record %s replayed", retry.body, retry.header.Get("Idempotent-Replayed"), rows[0]["id"])
		}
		if n := count(t, db, "SELECT id FROM records WHERE module_id = ?", notes); n != 1 {
			t.Errorf("%d records after the retry, want 1", n)
		}
		if n := count(t, db, "SELECT id FROM events WHERE record_id = ?", rows[0]["id"]); n != 1 {
			t.Errorf("%d events after the retry, want 1", n)
		}
	})
	t.Run("patch", func(t *testing.T) {
		id := e.createRecord(notes, map[string]any{"title": "before"})
		body := map[string]any{"fields": map[string]any{"title": "after"}}
		proxy.CutAfterSent([]byte("commit"))
		r := e.call("PATCH", path+"/"+id, e.admin, body, idem("lost-patch-answer")...)
		wantErrorBody(t, r.want(503), "unavailable")
		retry := e.call("PATCH", path+"/"+id, e.admin, body, idem("lost-patch-answer")...).want(200)
		if retry.header.Get("Idempotent-Replayed") != "true" || retry.json()["version"] != float64(2) {
			t.Errorf("retry %s (replayed %q), want version 2 replayed", retry.body, retry.header.Get("Idempotent-Replayed"))
		}
		if n := count(t, db, "SELECT id FROM events WHERE record_id = ?", id); n != 2 {
			t.Errorf("%d events after the retry, want 2 (created, updated)", n)
		}
	})
}

// TestIdempotencyKeyRefusals: a key sent again with another body, path or
// method is 422 idempotency_key_reused and changes nothing; a malformed
// key is 400 naming the header; a refused request stores nothing, so its
// retry with the same key and a fixed body runs.
func TestIdempotencyKeyRefusals(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string", "required": true})
		path := "/api/modules/" + notes + "/records"
		body := map[string]any{"fields": map[string]any{"title": "a"}}
		first := e.call("POST", path, e.admin, body, idem("k1")...).want(201)
		id := first.json()["id"].(string)

		reused := []struct {
			name, method, path string
			body               any
		}{
			{"another body", "POST", path, map[string]any{"fields": map[string]any{"title": "b"}}},
			{"another query", "POST", path + "?x=1", body},
			{"another path", "PATCH", path + "/" + id, body},
			{"another method", "DELETE", path + "/" + id, nil},
		}
		for _, c := range reused {
			r := e.call(c.method, c.path, e.admin, c.body, idem("k1")...).want(422)
			wantErrorBody(t, r, "idempotency_key_reused")
			if r.header.Get("Idempotent-Replayed") != "" {
				t.Errorf("%s: a refusal marked replayed", c.name)
			}
		}
		got := e.call("GET", path+"/"+id, e.admin, nil).want(200).json()
		if got["version"] != 1.0 {
			t.Errorf("record after the refused reuses: %v, want untouched at version 1", got)
		}

		for name, key := range map[string][]string{
			"empty": {""}, "256 characters": {strings.Repeat("k", 256)}, "a tab": {"a\tb"}, "non-ASCII": {"clé"},
			"sent twice": {"a", "b"},
		} {
			req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(`{"fields":{"title":"x"}}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+e.admin)
			req.Header.Set("Content-Type", "application/json")
			req.Header["Idempotency-Key"] = key
			res, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var msg bytes.Buffer
			_, _ = msg.ReadFrom(res.Body)
			res.Body.Close()
			if res.StatusCode != 400 || !strings.Contains(msg.String(), "Idempotency-Key") {
				t.Errorf("key %s: %d %s, want 400 naming the header", name, res.StatusCode, msg.String())
			}
		}
		e.call("POST", path, e.admin, body, idem(strings.Repeat("k", 255))...).want(201)

		// A 422 stores nothing: the fixed request with the same key runs.
		e.call("POST", path, e.admin, map[string]any{"fields": map[string]any{}}, idem("fix-me")...).want(422)
		fixed := e.call("POST", path, e.admin, body, idem("fix-me")...).want(201)
		if fixed.header.Get("Idempotent-Replayed") != "" {
			t.Error("the fixed request was answered as a replay")
		}
		if n := count(t, db, "SELECT id FROM records WHERE module_id = ?", notes); n != 3 {
			t.Errorf("%d records, want 3", n)
		}
	})
}

// TestIdempotentChanges: a PATCH and a DELETE sent again with their key
// are answered as the first time and change nothing again (no second
// version, no 404 for the second delete).
func TestIdempotentChanges(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		id := e.createRecord(notes, map[string]any{"title": "v1"})
		path := "/api/modules/" + notes + "/records/" + id
		patch := map[string]any{"fields": map[string]any{"title": "v2"}}

		first := e.call("PATCH", path, e.admin, patch, idem("p")...).want(200)
		wantReplay(t, e.call("PATCH", path, e.admin, patch, idem("p")...), first)
		if got := e.call("GET", path, e.admin, nil).want(200).json(); got["version"] != 2.0 {
			t.Errorf("record after the replayed PATCH: %v, want version 2", got)
		}

		del := e.call("DELETE", path, e.admin, nil, idem("d")...).want(200)
		wantReplay(t, e.call("DELETE", path, e.admin, nil, idem("d")...), del)
		if n := count(t, db, "SELECT id FROM events WHERE record_id = ?", id); n != 3 {
			t.Errorf("%d events of the record, want created, updated and deleted once each", n)
		}
	})
}

// TestIdempotentAdminCreates: a module and a key created with a key are
// replayed with what their first answer held, the key's secret included
// (kept from caches), and the stored answer is sealed in the database.
func TestIdempotentAdminCreates(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		mod := map[string]any{"slug": "orders", "name": "Orders", "fields": []any{}}
		first := e.call("POST", "/api/admin/modules", e.admin, mod, idem("m")...).want(201)
		wantReplay(t, e.call("POST", "/api/admin/modules", e.admin, mod, idem("m")...), first)

		keyBody := map[string]any{"name": "ci", "permissions": map[string]any{first.json()["id"].(string): []string{"read"}}}
		key := e.call("POST", "/api/admin/keys", e.admin, keyBody, idem("k")...).want(201)
		again := e.call("POST", "/api/admin/keys", e.admin, keyBody, idem("k")...)
		wantReplay(t, again, key)
		if again.header.Get("Cache-Control") != "no-store" {
			t.Errorf("replayed key's Cache-Control %q, want no-store", again.header.Get("Cache-Control"))
		}
		secret := key.json()["key"].(string)
		if n := count(t, db, "SELECT id FROM api_keys WHERE name = ?", "ci"); n != 1 {
			t.Errorf("%d keys named ci, want 1", n)
		}
		for _, row := range db.Rows(t, "SELECT body FROM idempotency_keys") {
			if strings.Contains(row["body"], secret) || strings.Contains(row["body"], "orders") {
				t.Errorf("a stored answer holds its body in clear: %.80s…", row["body"])
			}
		}
	})
}

// TestIdempotencyKeysPerAPIKey: the same Idempotency-Key sent by two API
// keys names two requests.
func TestIdempotencyKeysPerAPIKey(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		_, writer := e.createKey(map[string]any{"name": "w", "permissions": map[string]any{notes: []string{"read", "write"}}})
		path := "/api/modules/" + notes + "/records"
		body := map[string]any{"fields": map[string]any{"title": "same"}}
		a := e.call("POST", path, e.admin, body, idem("shared")...).want(201)
		b := e.call("POST", path, writer, body, idem("shared")...).want(201)
		if b.header.Get("Idempotent-Replayed") != "" || a.json()["id"] == b.json()["id"] {
			t.Errorf("another API key's request with the same key: %s, want a record of its own", b.body)
		}
		if n := count(t, db, "SELECT id FROM records WHERE module_id = ?", notes); n != 2 {
			t.Errorf("%d records, want 2", n)
		}
	})
}

// TestIdempotencyKeysExpire: past the TTL a stored answer is ignored (the
// request runs again) and the retention purge deletes it.
func TestIdempotencyKeysExpire(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		clock := storetest.NewClock()
		store := db.Open(t, models.Options{Now: clock.Now})
		const ttl = time.Hour
		e := newEnvOn(t, store, func(d *api.Deps) { d.Now, d.IdempotencyTTL = clock.Now, ttl })
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		path := "/api/modules/" + notes + "/records"
		body := map[string]any{"fields": map[string]any{"title": "t"}}
		first := e.call("POST", path, e.admin, body, idem("old")...).want(201)
		e.call("POST", path, e.admin, body, idem("other")...).want(201)

		clock.Advance(ttl - time.Second)
		wantReplay(t, e.call("POST", path, e.admin, body, idem("old")...), first)
		clock.Advance(2 * time.Second)
		again := e.call("POST", path, e.admin, body, idem("old")...).want(201)
		if again.header.Get("Idempotent-Replayed") != "" || again.json()["id"] == first.json()["id"] {
			t.Errorf("past the TTL: %s, want a new record", again.body)
		}
		n, err := store.Purge(context.Background(), models.PurgeIdempotencyKeys, clock.Now().Add(-ttl), 100)
		if err != nil || n != 1 {
			t.Errorf("purge: %d, %v; want the expired answer of key other", n, err)
		}
		if got := fmt.Sprint(db.Rows(t, "SELECT idem_key FROM idempotency_keys")); got != "[map[idem_key:old]]" {
			t.Errorf("answers left: %s, want old's new one", got)
		}
	})
}

// TestIdempotentWritesFillNoPool: keyed writes hold a connection for their
// transaction and read through others (a module not in the cache yet):
// many at once on a small pool all finish, none waiting for ever on a
// connection another one holds.
func TestIdempotentWritesFillNoPool(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		// A replica with cold caches and a pool of 2.
		r := replicaOf(t, e, db.Open(t, models.Options{MaxOpenConns: 2}))
		const n = 8
		var wg sync.WaitGroup
		answers := make([]string, n)
		for i := range n {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "POST", r.srv.URL+"/api/modules/"+notes+"/records",
					strings.NewReader(`{"fields":{"title":"x"}}`))
				req.Header.Set("Authorization", "Bearer "+e.admin)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprint("pool-", i))
				res, err := r.srv.Client().Do(req)
				if err != nil {
					answers[i] = err.Error()
					return
				}
				res.Body.Close()
				answers[i] = res.Status
			})
		}
		wg.Wait()
		for i, a := range answers {
			if a != "201 Created" {
				t.Errorf("create %d: %s, want 201 Created", i, a)
			}
		}
	})
}

// TestIdempotentOutsideTransaction: a route that starts a workflow (a
// resync) runs outside the transaction yet is answered once per key: the
// repeat is the first 202 again and starts nothing; a key held by a
// request still running is 409 there too.
func TestIdempotentOutsideTransaction(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		starter := &resyncStarter{}
		store := storetest.Open(t, d)
		e := newEnvOn(t, store, withResyncer(resyncer{&workflows.Resyncs{Starter: starter, Store: store}}))
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_snapshot"}})["id"].(string)
		path := "/api/admin/webhook-endpoints/" + ep + "/resync"

		first := e.call("POST", path, e.admin, nil, idem("resync-1")...).want(202)
		wantReplay(t, e.call("POST", path, e.admin, nil, idem("resync-1")...), first)
		if len(starter.inputs) != 1 {
			t.Errorf("%d resyncs started, want 1", len(starter.inputs))
		}
		// Another key is another request: refused by the resync's own
		// rule (one runs at a time), and not stored.
		wantErrorBody(t, e.call("POST", path, e.admin, nil, idem("resync-2")...).want(409), "conflict")

		k, err := store.Authenticate(t.Context(), e.admin)
		if err != nil {
			t.Fatal(err)
		}
		release, _, err := store.ClaimIdempotencyKey(t.Context(), k.ID, "resync-held", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		r := e.call("POST", path, e.admin, nil, idem("resync-held")...).want(409)
		if r.header.Get("Retry-After") != "1" {
			t.Errorf("held key's Retry-After %q, want 1", r.header.Get("Retry-After"))
		}
		release()
		if len(starter.inputs) != 1 {
			t.Errorf("%d resyncs started, want 1", len(starter.inputs))
		}
	})
}

// TestIdempotentAdminRoutes: every admin write that runs in the
// transaction answers with a key as without one (none waits on the
// transaction it is in, on SQLite's single writer included) and is
// replayed on its repeat.
func TestIdempotentAdminRoutes(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		e.srv.Client().Timeout = 20 * time.Second
		mod := e.createModule("things")
		keyID, _ := e.createKey(map[string]any{"name": "k", "permissions": map[string]any{mod: []string{"read"}}})
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		hook := e.configureInbound("shop", orderConfig(nil))
		calls := []struct {
			method, path string
			body         any
		}{
			{"PATCH", "/api/admin/modules/" + mod, map[string]any{"name": "Things"}},
			{"PATCH", "/api/admin/keys/" + keyID, map[string]any{"name": "k2"}},
			{"POST", "/api/admin/keys/" + keyID + "/rotate", nil},
			{"DELETE", "/api/admin/keys/" + keyID, nil},
			{"POST", "/api/admin/webhook-endpoints", map[string]any{"url": "https://hooks.example.com/b", "events": []string{"record_created"}}},
			{"PATCH", "/api/admin/webhook-endpoints/" + ep, map[string]any{"enabled": false}},
			{"POST", "/api/admin/webhook-endpoints/" + ep + "/rotate-secret", nil},
			{"DELETE", "/api/admin/webhook-endpoints/" + ep, nil},
			{"POST", "/api/admin/modules/" + hook.moduleID + "/inbound-webhook/rotate-token", nil},
			{"DELETE", "/api/admin/modules/" + hook.moduleID + "/inbound-webhook", nil},
			{"DELETE", "/api/admin/modules/" + mod, nil},
		}
		for i, c := range calls {
			key := fmt.Sprint("admin-", i)
			first := e.call(c.method, c.path, e.admin, c.body, idem(key)...)
			if first.status/100 != 2 {
				t.Errorf("%s %s: %d %s", c.method, c.path, first.status, first.body)
				continue
			}
			wantReplay(t, e.call(c.method, c.path, e.admin, c.body, idem(key)...), first)
		}
	})
}

// TestIdempotentBatch: a batch sent with a key runs in the key's
// transaction (its own nests in it) and is applied once: the repeat is
// the first answer again, and a batch refused stores nothing.
func TestIdempotentBatch(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{}))
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string", "required": true})
		url := "/api/modules/" + notes + "/records"
		good := batchOf(op("POST", url, map[string]any{"fields": map[string]any{"title": "a"}}),
			op("POST", url, map[string]any{"fields": map[string]any{"title": "b"}}))

		refused := batchOf(op("POST", url, map[string]any{"fields": map[string]any{"title": "a"}}),
			op("POST", url, map[string]any{"fields": map[string]any{}}))
		e.call("POST", "/api/batch", e.admin, refused, idem("batch")...).want(422)
		if n := count(t, db, "SELECT id FROM records WHERE module_id = ?", notes); n != 0 {
			t.Fatalf("%d records after a refused batch, want 0", n)
		}
		first := e.call("POST", "/api/batch", e.admin, good, idem("batch")...).want(200)
		wantReplay(t, e.call("POST", "/api/batch", e.admin, good, idem("batch")...), first)
		if n := count(t, db, "SELECT id FROM records WHERE module_id = ?", notes); n != 2 {
			t.Errorf("%d records, want 2", n)
		}
	})
}
