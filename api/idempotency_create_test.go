package api_test

import (
	"sync/atomic"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestIdempotentCreateStatements: a keyed record create sends the
// database what a plain one does and no more on PostgreSQL (one
// statement, which stores the answer too), one statement more on SQLite
// (the answer's row, in the record's commit); its repeat is one statement
// on PostgreSQL. A keyed create refused (an invalid record) stores
// nothing, and its key then serves a valid create.
func TestIdempotentCreateStatements(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		var stmts atomic.Int64
		db := storetest.NewDB(t, d)
		e := newEnvOn(t, db.Open(t, models.Options{OnStatement: func(string) { stmts.Add(1) }}), withoutAccessLogs())
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		path := "/api/modules/" + notes + "/records"
		body := map[string]any{"fields": map[string]any{"title": "counted"}}
		// The key and the module are cached, the connections open.
		e.call("POST", path, e.admin, body).want(201)
		e.call("POST", path, e.admin, body, idem("warm")...).want(201)

		stmts.Store(0)
		e.call("POST", path, e.admin, body).want(201)
		plain := stmts.Swap(0)
		first := e.call("POST", path, e.admin, body, idem("counted")...).want(201)
		keyed := stmts.Swap(0)
		wantReplay(t, e.call("POST", path, e.admin, body, idem("counted")...), first)
		replay := stmts.Swap(0)
		t.Logf("statements: plain %d, keyed %d, replay %d", plain, keyed, replay)

		want := map[models.Dialect]int64{models.Postgres: plain, models.SQLite: plain + 1}[d]
		if keyed != want {
			t.Errorf("a keyed create sent %d statements, a plain one %d; want %d", keyed, plain, want)
		}
		if d == models.Postgres && (plain != 1 || replay != 1) {
			t.Errorf("plain create %d statements, replay %d; want 1 each", plain, replay)
		}

		wantErrorBody(t, e.call("POST", path, e.admin, map[string]any{"fields": map[string]any{"title": 5}}, idem("refused")...).want(422), "validation_failed")
		if n := count(t, db, "SELECT idem_key FROM idempotency_keys WHERE idem_key = ?", "refused"); n != 0 {
			t.Errorf("%d answers stored for a refused create, want 0", n)
		}
		made := e.call("POST", path, e.admin, body, idem("refused")...).want(201)
		if made.header.Get("Idempotent-Replayed") != "" {
			t.Error("the refused create's key answered a replay")
		}
	})
}
