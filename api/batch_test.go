package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// batchEnv is an API on a database the test also reads directly, to see
// that a refused batch wrote nothing.
type batchEnv struct {
	*env
	db *storetest.DB
}

func newBatchEnv(t *testing.T, d models.Dialect, opts ...envOption) *batchEnv {
	t.Helper()
	db := storetest.NewDB(t, d)
	return &batchEnv{env: newEnvOn(t, db.Open(t, models.Options{}), opts...), db: db}
}

// storeCounts are the records and events stored, by module, and the versions
// of the records that exist.
type storeCounts struct {
	records, events map[string]string
	versions        map[string]string
}

func (e *batchEnv) counts() storeCounts {
	e.t.Helper()
	c := storeCounts{records: map[string]string{}, events: map[string]string{}, versions: map[string]string{}}
	for _, r := range e.db.Rows(e.t, "SELECT module_id, COUNT(*) AS n FROM records GROUP BY module_id") {
		c.records[r["module_id"]] = r["n"]
	}
	for _, r := range e.db.Rows(e.t, "SELECT module_id, COUNT(*) AS n FROM events GROUP BY module_id") {
		c.events[r["module_id"]] = r["n"]
	}
	for _, r := range e.db.Rows(e.t, "SELECT id, version FROM records") {
		c.versions[r["id"]] = r["version"]
	}
	return c
}

// wantUnchanged fails the test unless the store holds what before says.
func (e *batchEnv) wantUnchanged(before storeCounts) {
	e.t.Helper()
	if diff := cmp.Diff(before, e.counts(), cmp.AllowUnexported(storeCounts{})); diff != "" {
		e.t.Errorf("a refused batch changed the store (-before +after):\n%s", diff)
	}
}

// op is one operation of a batch.
func op(method, url string, body any, headers ...string) map[string]any {
	o := map[string]any{"method": method, "url": url}
	if body != nil {
		o["body"] = body
	}
	if len(headers) > 0 {
		h := map[string]string{}
		for i := 0; i+1 < len(headers); i += 2 {
			h[headers[i]] = headers[i+1]
		}
		o["headers"] = h
	}
	return o
}

func createOp(moduleID string, fields map[string]any) map[string]any {
	return op("POST", "/api/modules/"+moduleID+"/records", map[string]any{"fields": fields})
}

func batchOf(ops ...map[string]any) map[string]any { return map[string]any{"requests": ops} }

// batchItem is one item of a batch's answer.
type batchItem struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    map[string]any    `json:"body"`
}

// wantBatchError checks a refused batch's error body: its code, and the
// operation it names (-1: none).
func wantBatchError(t *testing.T, r *resp, status int, code string, index int) map[string]any {
	t.Helper()
	r.want(status)
	m := wantErrorBody(t, r, code)
	got, named := m["index"].(float64)
	switch {
	case index < 0 && named:
		t.Errorf("error names operation %v, want none; body %s", got, r.body)
	case index >= 0 && (!named || int(got) != index):
		t.Errorf("error names operation %v, want %d; body %s", m["index"], index, r.body)
	}
	return m
}

// TestBatchCreates: 100 creates in one batch make 100 records and their
// 100 events, each answered as the create route answers it.
func TestBatchCreates(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newBatchEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		var ops []map[string]any
		for i := range 100 {
			ops = append(ops, createOp(mod, map[string]any{"title": fmt.Sprint("order ", i), "qty": i}))
		}
		var items []batchItem
		e.call("POST", "/api/batch", e.admin, batchOf(ops...)).want(http.StatusOK).decode(&items)
		if len(items) != 100 {
			t.Fatalf("%d items, want 100", len(items))
		}
		for i, it := range items {
			id, _ := it.Body["id"].(string)
			want := batchItem{Status: http.StatusCreated, Headers: map[string]string{
				"ETag": `"1"`, "Location": "/api/modules/" + mod + "/records/" + id,
			}}
			if diff := cmp.Diff(want, batchItem{Status: it.Status, Headers: it.Headers}); diff != "" || it.Body["fields"].(map[string]any)["qty"] != float64(i) {
				t.Errorf("item %d: %+v; want, in order, (-want +got):\n%s", i, it, diff)
			}
		}
		// An item's body is what reading the record answers.
		got := e.call("GET", items[57].Headers["Location"], e.admin, nil).want(http.StatusOK).json()
		if diff := cmp.Diff(got, items[57].Body); diff != "" {
			t.Errorf("item 57 against GET of its record (-get +item):\n%s", diff)
		}
		c := e.counts()
		if c.records[mod] != "100" || c.events[mod] != "100" {
			t.Errorf("after a batch of 100 creates: %s records, %s events; want 100 of each", c.records[mod], c.events[mod])
		}
	})
}

// TestBatchRefusedAppliesNothing: a batch with one failing operation,
// whether refused before the transaction (a permission, a module) or while
// applying it (a value, an If-Match, a missing record), answers that
// operation's error with its index and leaves every record and event as
// it was, the changes of the operations before it included.
func TestBatchRefusedAppliesNothing(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newBatchEnv(t, d)
		orders := e.createModule("orders", orderFields...)
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		other := newEnvOn(t, e.store).createModule("orders", orderFields...) // another tenant's
		rec := e.createRecord(orders, map[string]any{"title": "kept"})
		note := e.createRecord(notes, map[string]any{"title": "kept"})
		_, writer := e.createKey(map[string]any{"permissions": map[string]any{
			orders: []string{"read", "write", "delete"}, notes: []string{"read"},
		}})
		patchRec := op("PATCH", "/api/modules/"+orders+"/records/"+rec, map[string]any{"fields": map[string]any{"qty": 5}})

		// hundred is 100 valid creates on orders, but for operation i.
		hundred := func(i int, bad map[string]any) []map[string]any {
			var ops []map[string]any
			for j := range 100 {
				ops = append(ops, createOp(orders, map[string]any{"title": fmt.Sprint("new ", j)}))
			}
			ops[i] = bad
			return ops
		}
		tests := []struct {
			name   string
			ops    []map[string]any
			status int
			code   string
			index  int
			check  func(t *testing.T, body map[string]any)
		}{
			{"invalid value at 57", hundred(57, createOp(orders, map[string]any{"title": "x", "qty": "many"})),
				http.StatusUnprocessableEntity, "validation_failed", 57, func(t *testing.T, body map[string]any) {
					details, _ := body["details"].([]any)
					if len(details) != 1 || details[0].(map[string]any)["field"] != "fields.qty" {
						t.Errorf("details %v, want one on fields.qty", body["details"])
					}
				}},
			{"no write on a module", []map[string]any{patchRec, createOp(orders, map[string]any{"title": "a"}), createOp(notes, map[string]any{"title": "b"})},
				http.StatusForbidden, "forbidden", 2, func(t *testing.T, body map[string]any) {
					if body["required"] != "write" {
						t.Errorf("required %v, want write", body["required"])
					}
				}},
			{"no delete on a module", []map[string]any{patchRec, op("DELETE", "/api/modules/"+notes+"/records/"+note, nil)},
				http.StatusForbidden, "forbidden", 1, func(t *testing.T, body map[string]any) {
					if body["required"] != "delete" {
						t.Errorf("required %v, want delete", body["required"])
					}
				}},
			{"another tenant's module", []map[string]any{patchRec, createOp(orders, map[string]any{"title": "a"}), createOp(other, map[string]any{"title": "b"})},
				http.StatusNotFound, "not_found", 2, nil},
			{"a missing module", []map[string]any{patchRec, createOp("mod_01JZZZZZZZZZZZZZZZZZZZZZZZ", map[string]any{"title": "b"})},
				http.StatusNotFound, "not_found", 1, nil},
			{"If-Match of another version", []map[string]any{
				createOp(orders, map[string]any{"title": "a"}),
				patchRec,
				op("PATCH", "/api/modules/"+orders+"/records/"+rec, map[string]any{"fields": map[string]any{"qty": 6}}, "If-Match", `"1"`),
			}, http.StatusPreconditionFailed, "precondition_failed", 2, nil},
			{"If-Match that is no version", []map[string]any{patchRec, op("PATCH", "/api/modules/"+orders+"/records/"+rec, map[string]any{}, "If-Match", `"x"`)},
				http.StatusPreconditionFailed, "precondition_failed", 1, nil},
			{"a missing record", []map[string]any{patchRec, op("DELETE", "/api/modules/"+orders+"/records/rec_01JZZZZZZZZZZZZZZZZZZZZZZZ", nil)},
				http.StatusNotFound, "not_found", 1, nil},
			{"a record deleted earlier in the batch", []map[string]any{
				op("DELETE", "/api/modules/"+orders+"/records/"+rec, nil), createOp(orders, map[string]any{"title": "a"}), patchRec,
			}, http.StatusNotFound, "not_found", 2, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := &batchEnv{env: e.on(t), db: e.db}
				before := e.counts()
				r := e.call("POST", "/api/batch", writer, batchOf(tt.ops...))
				body := wantBatchError(t, r, tt.status, tt.code, tt.index)
				if tt.check != nil {
					tt.check(t, body)
				}
				e.wantUnchanged(before)
			})
		}
	})
}

// TestBatchRefusesMalformed: a batch that is not 1 to 100 operations, or
// one of whose operations is not a record write as its route takes it, is
// refused before anything is read or written, naming the operation.
func TestBatchRefusesMalformed(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newBatchEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		rec := e.createRecord(mod, map[string]any{"title": "kept"})
		good := createOp(mod, map[string]any{"title": "a"})
		recURL := "/api/modules/" + mod + "/records/" + rec
		many := make([]map[string]any, 101)
		for i := range many {
			many[i] = good
		}
		tests := []struct {
			name   string
			body   any
			status int
			code   string
			index  int
		}{
			{"no operations", batchOf(), http.StatusBadRequest, "invalid_request", -1},
			{"requests absent", map[string]any{}, http.StatusBadRequest, "invalid_request", -1},
			{"101 operations", batchOf(many...), http.StatusBadRequest, "invalid_request", -1},
			{"an unknown member", map[string]any{"requests": []any{good}, "atomic": true}, http.StatusBadRequest, "invalid_request", -1},
			{"GET", batchOf(good, op("GET", recURL, nil)), http.StatusBadRequest, "invalid_request", 1},
			{"PUT", batchOf(good, good, op("PUT", recURL, map[string]any{})), http.StatusBadRequest, "invalid_request", 2},
			{"a lower-case method", batchOf(op("post", "/api/modules/"+mod+"/records", map[string]any{})), http.StatusBadRequest, "invalid_request", 0},
			{"another route", batchOf(good, op("POST", "/api/admin/modules", map[string]any{})), http.StatusBadRequest, "invalid_request", 1},
			{"POST on a record", batchOf(good, op("POST", recURL, map[string]any{})), http.StatusBadRequest, "invalid_request", 1},
			{"PATCH on the collection", batchOf(good, op("PATCH", "/api/modules/"+mod+"/records", map[string]any{})), http.StatusBadRequest, "invalid_request", 1},
			{"a query string", batchOf(good, op("DELETE", recURL+"?force=1", nil)), http.StatusBadRequest, "invalid_request", 1},
			{"a trailing slash", batchOf(good, op("DELETE", recURL+"/", nil)), http.StatusBadRequest, "invalid_request", 1},
			{"an absolute URL", batchOf(good, op("DELETE", "http://example.com"+recURL, nil)), http.StatusBadRequest, "invalid_request", 1},
			{"an operation that is no object", map[string]any{"requests": []any{good, "DELETE " + recURL}}, http.StatusBadRequest, "invalid_request", 1},
			{"an unknown operation member", batchOf(good, map[string]any{"method": "DELETE", "url": recURL, "query": "x"}), http.StatusBadRequest, "invalid_request", 1},
			{"a POST without a body", batchOf(good, op("POST", "/api/modules/"+mod+"/records", nil)), http.StatusBadRequest, "invalid_request", 1},
			{"an unknown body member", batchOf(good, op("POST", "/api/modules/"+mod+"/records", map[string]any{"field": map[string]any{}})), http.StatusBadRequest, "invalid_request", 1},
			{"a body member of the wrong type", batchOf(good, op("POST", "/api/modules/"+mod+"/records", map[string]any{"fields": "x"})), http.StatusUnprocessableEntity, "validation_failed", 1},
			{"a DELETE with a body", batchOf(good, op("DELETE", recURL, map[string]any{"fields": map[string]any{}})), http.StatusBadRequest, "invalid_request", 1},
			{"another header", batchOf(good, op("PATCH", recURL, map[string]any{}, "Content-Type", "application/json")), http.StatusBadRequest, "invalid_request", 1},
			{"If-Match on a DELETE", batchOf(good, op("DELETE", recURL, nil, "If-Match", `"1"`)), http.StatusBadRequest, "invalid_request", 1},
			// The whole body's check finds it first, and names it in details.
			{"NUL in a body", batchOf(good, createOp(mod, map[string]any{"title": "a\x00b"})), http.StatusUnprocessableEntity, "validation_failed", -1},
			{"a module's slug for its id", batchOf(good, createOp("orders", map[string]any{"title": "a"})), http.StatusNotFound, "not_found", 1},
			{"a record id without its prefix", batchOf(good, op("DELETE", "/api/modules/"+mod+"/records/kept", nil)), http.StatusNotFound, "not_found", 1},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				e := &batchEnv{env: e.on(t), db: e.db}
				before := e.counts()
				r := e.call("POST", "/api/batch", e.admin, tt.body)
				body := wantBatchError(t, r, tt.status, tt.code, tt.index)
				if tt.code == "validation_failed" && tt.index < 0 {
					wantDetails(t, r, "requests[1].body.fields.title")
				}
				if msg := body["message"].(string); tt.index < 0 && tt.code == "invalid_request" && strings.Contains(tt.name, "operations") && !strings.Contains(msg, "100") {
					t.Errorf("message %q does not name the bound of 100", msg)
				}
				e.wantUnchanged(before)
			})
		}
		// The route takes no query parameter.
		r := e.call("POST", "/api/batch?atomic=1", e.admin, batchOf(good))
		wantBatchError(t, r, http.StatusBadRequest, "invalid_request", -1)
	})
}

// TestBatchPatchThenDelete: operations on one record apply in order, each
// with its event, in version order.
func TestBatchPatchThenDelete(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newBatchEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		rec := e.createRecord(mod, map[string]any{"title": "a", "qty": 1})
		url := "/api/modules/" + mod + "/records/" + rec
		var items []batchItem
		e.call("POST", "/api/batch", e.admin, batchOf(
			op("PATCH", url, map[string]any{"fields": map[string]any{"qty": 2}}, "If-Match", `"1"`),
			op("PATCH", url, map[string]any{"fields": map[string]any{"qty": 3}}, "if-match", `"2"`),
			op("DELETE", url, nil),
		)).want(http.StatusOK).decode(&items)
		got := []any{items[0].Status, items[0].Headers, items[0].Body["version"], items[1].Headers, items[1].Body["fields"].(map[string]any)["qty"], items[2].Status, items[2].Headers, items[2].Body}
		want := []any{200, map[string]string{"ETag": `"2"`}, float64(2), map[string]string{"ETag": `"3"`}, float64(3), 200, map[string]string{}, map[string]any{"id": rec, "deleted": true}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
		e.call("GET", url, e.admin, nil).want(http.StatusNotFound)
		var events []string
		for _, r := range e.db.Rows(t, "SELECT type, record_version FROM events WHERE record_id = ? ORDER BY occurred_at, record_version", rec) {
			events = append(events, r["type"]+" "+r["record_version"])
		}
		wantEvents := []string{"record_created 1", "record_updated 2", "record_updated 3", "record_deleted 4"}
		if diff := cmp.Diff(wantEvents, events); diff != "" {
			t.Errorf("events of the record (-want +got):\n%s", diff)
		}
	})
}

// TestBatchMixedModules: one batch writes in several modules, each
// operation with the key's permission there.
func TestBatchMixedModules(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newBatchEnv(t, d)
		orders := e.createModule("orders", orderFields...)
		notes := e.createModule("notes", map[string]any{"name": "title", "type": "string"})
		order := e.createRecord(orders, map[string]any{"title": "o"})
		note := e.createRecord(notes, map[string]any{"title": "n"})
		_, key := e.createKey(map[string]any{"permissions": map[string]any{
			orders: []string{"write"}, notes: []string{"delete", "write"},
		}})
		var items []batchItem
		e.call("POST", "/api/batch", key, batchOf(
			createOp(notes, map[string]any{"title": "n2"}),
			op("PATCH", "/api/modules/"+orders+"/records/"+order, map[string]any{"custom_data": map[string]any{"k": "v"}}),
			createOp(orders, map[string]any{"title": "o2"}),
			op("DELETE", "/api/modules/"+notes+"/records/"+note, nil),
		)).want(http.StatusOK).decode(&items)
		var got []string
		for _, it := range items {
			got = append(got, fmt.Sprint(it.Status, " ", it.Body["module_id"], " ", it.Body["id"] != nil))
		}
		want := []string{"201 " + notes + " true", "200 " + orders + " true", "201 " + orders + " true", "200 <nil> true"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
		c := e.counts()
		// orders: o, o2 and 3 events; notes: n2 (n deleted) and 3 events.
		wantCounts := []string{"2", "3", "1", "3"}
		if diff := cmp.Diff(wantCounts, []string{c.records[orders], c.events[orders], c.records[notes], c.events[notes]}); diff != "" {
			t.Errorf("records and events of orders and notes (-want +got):\n%s", diff)
		}
	})
}

// TestBatchRateLimit: a batch's operations count against the key's budget
// one each, beside the call itself; a batch past the budget is refused
// whole, and spends none of it.
func TestBatchRateLimit(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		for _, l := range limiters {
			t.Run(l.name, func(t *testing.T) {
				e := newBatchEnv(t, d, l.opts(t)...)
				mod := e.createModule("orders", orderFields...)
				creates := func(n int) map[string]any {
					ops := make([]map[string]any, n)
					for i := range ops {
						ops[i] = createOp(mod, map[string]any{"title": fmt.Sprint("t", i)})
					}
					return batchOf(ops...)
				}

				// 11 operations and the call are over a budget of 10.
				_, key := e.createKey(map[string]any{"rate_limit_per_minute": 10, "permissions": map[string]any{"*": []string{"write"}}})
				before := e.counts()
				r := e.call("POST", "/api/batch", key, creates(11))
				body := wantBatchError(t, r, http.StatusTooManyRequests, "rate_limited", -1)
				if r.header.Get("Retry-After") == "" || body["limit"] != float64(10) {
					t.Errorf("429 with Retry-After %q and limit %v, want a Retry-After and 10", r.header.Get("Retry-After"), body["limit"])
				}
				e.wantUnchanged(before)

				// 5 operations and the call leave 4 of 10.
				_, key = e.createKey(map[string]any{"rate_limit_per_minute": 10, "permissions": map[string]any{"*": []string{"write"}}})
				r = e.call("POST", "/api/batch", key, creates(5)).want(http.StatusOK)
				if got := r.header.Get("X-RateLimit-Remaining"); got != "4" {
					t.Errorf("X-RateLimit-Remaining after a batch of 5: %q, want 4", got)
				}
				var statuses []int
				for range 5 {
					statuses = append(statuses, e.call("POST", "/api/modules/"+mod+"/records", key, map[string]any{"fields": map[string]any{"title": "single"}}).status)
				}
				if diff := cmp.Diff([]int{201, 201, 201, 201, 429}, statuses); diff != "" {
					t.Errorf("single creates after a batch of 5 (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestBatchLocksBeforeWriting: on PostgreSQL a batch takes the lock of
// every record it changes before its transaction's first write, so that
// the transaction gets its id, by which the change feed orders, only once
// it holds them all. A record locked elsewhere holds the batch up before
// the create that comes first in it.
func TestBatchLocksBeforeWriting(t *testing.T) {
	e := newBatchEnv(t, models.Postgres)
	mod := e.createModule("orders", orderFields...)
	rec := e.createRecord(mod, map[string]any{"title": "a"})
	ctx := t.Context()
	holder, err := e.db.SQL(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", rec); err != nil {
		t.Fatal(err)
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", rec); err != nil {
				t.Error(err)
			}
		}
	}
	defer unlock()

	body, err := json.Marshal(batchOf(
		createOp(mod, map[string]any{"title": "b"}),
		op("PATCH", "/api/modules/"+mod+"/records/"+rec, map[string]any{"fields": map[string]any{"qty": 1}}),
	))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/api/batch", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.admin)
	answered := make(chan int, 1)
	go func() {
		res, err := e.srv.Client().Do(req)
		if err != nil {
			answered <- 0
			return
		}
		res.Body.Close()
		answered <- res.StatusCode
	}()

	// The batch's backend waits for the record's lock: a bigint advisory
	// lock shows its key's high and low halves as classid and objid.
	var waiter map[string]string
	storetest.Eventually(t, 10*time.Second, "the batch waits for the record's lock", func() bool {
		rows := e.db.Rows(t, `SELECT a.backend_xid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid,
			(SELECT hashtextextended(?, 0) AS k) AS key
			WHERE l.locktype = 'advisory' AND NOT l.granted
			AND l.classid::bigint = (key.k >> 32) & 4294967295 AND l.objid::bigint = key.k & 4294967295`, rec)
		if len(rows) > 0 {
			waiter = rows[0]
		}
		return waiter != nil
	})
	if waiter["backend_xid"] != "NULL" {
		t.Errorf("the batch's transaction has id %s while it waits for a lock, want none: it wrote before locking", waiter["backend_xid"])
	}
	unlock()
	if status := <-answered; status != http.StatusOK {
		t.Errorf("batch answered %d once the lock was free, want 200", status)
	}
}

// TestBatchCrossedChanges: batches that change the same records in
// opposite orders, at once, all pass: each locks its records before its
// first change, in one order, so none waits on another that waits on it
// (PostgreSQL would end such a deadlock by failing one of them). Each
// record ends with one version per change.
func TestBatchCrossedChanges(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newBatchEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		a := "/api/modules/" + mod + "/records/" + e.createRecord(mod, map[string]any{"title": "a", "qty": 0})
		b := "/api/modules/" + mod + "/records/" + e.createRecord(mod, map[string]any{"title": "b", "qty": 0})
		const n = 8
		statuses := make(chan int, n)
		for i := range n {
			first, second := a, b
			if i%2 == 1 {
				first, second = b, a
			}
			body := mustJSON(t, batchOf(
				op("PATCH", first, map[string]any{"fields": map[string]any{"qty": i + 1}}),
				createOp(mod, map[string]any{"title": "between"}),
				op("PATCH", second, map[string]any{"fields": map[string]any{"qty": i + 1}}),
			))
			go func() {
				req, err := http.NewRequest("POST", e.srv.URL+"/api/batch", bytes.NewReader(body))
				if err != nil {
					statuses <- 0
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+e.admin)
				res, err := e.srv.Client().Do(req)
				if err != nil {
					statuses <- 0
					return
				}
				res.Body.Close()
				statuses <- res.StatusCode
			}()
		}
		var got []int
		for range n {
			got = append(got, <-statuses)
		}
		if diff := cmp.Diff([]int{200, 200, 200, 200, 200, 200, 200, 200}, got); diff != "" {
			t.Errorf("statuses of %d crossed batches (-want +got):\n%s", n, diff)
		}
		for _, url := range []string{a, b} {
			if v := e.call("GET", url, e.admin, nil).want(http.StatusOK).json()["version"]; v != float64(n+1) {
				t.Errorf("%s at version %v after %d changes, want %d", url, v, n, n+1)
			}
		}
	})
}
