package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

var orderFields = []map[string]any{
	{"name": "title", "type": "string", "required": true},
	{"name": "qty", "type": "integer"},
	{"name": "price", "type": "number"},
	{"name": "paid", "type": "boolean"},
	{"name": "due", "type": "datetime"},
	{"name": "contact", "type": "email"},
	{"name": "site", "type": "url"},
	{"name": "size", "type": "enum", "options": []string{"s", "m", "l"}},
	{"name": "status", "type": "status", "states": []string{"new", "paid", "shipped", "cancelled"}, "initial": "new",
		"transitions": map[string][]string{"new": {"paid", "cancelled"}, "paid": {"shipped"}}},
	{"name": "meta", "type": "json"},
}

func TestPermissionMatrix(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		other := e.createModule("other", orderFields...)
		rec := e.createRecord(mod, map[string]any{"title": "a"})

		type op struct {
			name   string
			need   string
			call   func(e *env, key string) *resp
			status int
		}
		ops := []op{
			{"list", "read", func(e *env, k string) *resp { return e.call("GET", "/api/modules/"+mod+"/records", k, nil) }, 200},
			{"get", "read", func(e *env, k string) *resp { return e.call("GET", "/api/modules/"+mod+"/records/"+rec, k, nil) }, 200},
			{"create", "write", func(e *env, k string) *resp {
				return e.call("POST", "/api/modules/"+mod+"/records", k, map[string]any{"fields": map[string]any{"title": "b"}})
			}, 201},
			{"update", "write", func(e *env, k string) *resp {
				return e.call("PATCH", "/api/modules/"+mod+"/records/"+rec, k, map[string]any{"custom_data": map[string]any{"k": k[:8]}})
			}, 200},
			{"delete", "delete", func(e *env, k string) *resp {
				id := e.createRecord(mod, map[string]any{"title": "doomed"})
				return e.call("DELETE", "/api/modules/"+mod+"/records/"+id, k, nil)
			}, 200},
		}
		for _, grant := range []string{"read", "write", "delete"} {
			for _, scope := range []string{"module", "*"} {
				target := mod
				if scope == "*" {
					target = "*"
				}
				_, key := e.createKey(map[string]any{"permissions": map[string]any{target: []string{grant}, other: []string{"read", "write", "delete"}}})
				for _, o := range ops {
					t.Run(fmt.Sprintf("%s on %s/%s", grant, scope, o.name), func(t *testing.T) {
						r := o.call(e.on(t), key)
						if o.need == grant {
							r.want(o.status)
							return
						}
						r.want(http.StatusForbidden)
						got := r.json()
						if got["error"] != "forbidden" || got["required"] != o.need {
							t.Errorf("body %s, want error forbidden with required %q", r.body, o.need)
						}
					})
				}
			}
		}

		// GET /api/modules lists only modules the key holds a permission
		// on, each with the key's permissions there.
		_, key := e.createKey(map[string]any{"permissions": map[string]any{mod: []string{"delete", "read"}}})
		var l struct {
			Data []struct {
				ID          string   `json:"id"`
				Permissions []string `json:"permissions"`
			} `json:"data"`
			Total int `json:"total"`
		}
		e.call("GET", "/api/modules", key, nil).want(200).decode(&l)
		if l.Total != 1 || len(l.Data) != 1 || l.Data[0].ID != mod {
			t.Fatalf("modules %+v, want only %s", l, mod)
		}
		if diff := cmp.Diff([]string{"read", "delete"}, l.Data[0].Permissions); diff != "" {
			t.Errorf("permissions (-want +got):\n%s", diff)
		}
	})
}

func TestTenantIsolation(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		a := newEnv(t, d)
		b := newEnvOn(t, a.store) // a second tenant on the same database
		mod := a.createModule("orders", orderFields...)
		rec := a.createRecord(mod, map[string]any{"title": "secret"})
		keyID, _ := a.createKey(map[string]any{"name": "a-key"})
		bmod := b.createModule("orders", orderFields...) // same slug, other tenant: allowed

		for _, c := range []struct{ method, path string }{
			{"GET", "/api/modules/" + mod + "/records"},
			{"POST", "/api/modules/" + mod + "/records"},
			{"GET", "/api/modules/" + mod + "/records/" + rec},
			{"PATCH", "/api/modules/" + mod + "/records/" + rec},
			{"DELETE", "/api/modules/" + mod + "/records/" + rec},
			{"GET", "/api/modules/" + bmod + "/records/" + rec},
			{"PATCH", "/api/modules/" + bmod + "/records/" + rec},
			{"DELETE", "/api/modules/" + bmod + "/records/" + rec},
			{"GET", "/api/admin/modules/" + mod},
			{"PATCH", "/api/admin/modules/" + mod},
			{"DELETE", "/api/admin/modules/" + mod},
			{"GET", "/api/admin/keys/" + keyID},
			{"PATCH", "/api/admin/keys/" + keyID},
			{"DELETE", "/api/admin/keys/" + keyID},
			{"POST", "/api/admin/keys/" + keyID + "/rotate"},
			{"GET", "/api/admin/keys/" + keyID + "/usage"},
		} {
			t.Run(c.method+" "+c.path, func(t *testing.T) {
				b := b.on(t)
				var body any
				if c.method == "POST" || c.method == "PATCH" {
					body = map[string]any{"fields": map[string]any{"title": "x"}}
					if strings.Contains(c.path, "/admin/") {
						body = map[string]any{"name": "x"}
					}
					if strings.HasSuffix(c.path, "/rotate") {
						body = map[string]any{}
					}
				}
				r := b.call(c.method, c.path, b.admin, body).want(http.StatusNotFound)
				if r.errorCode() != "not_found" || strings.Contains(string(r.body), "secret") {
					t.Errorf("body %s", r.body)
				}
			})
		}
		// b's lists show nothing of a's.
		var mods struct{ Total int }
		b.call("GET", "/api/admin/modules", b.admin, nil).want(200).decode(&mods)
		if mods.Total != 1 {
			t.Errorf("tenant b sees %d modules, want 1", mods.Total)
		}
		var keys struct{ Total int }
		b.call("GET", "/api/admin/keys", b.admin, nil).want(200).decode(&keys)
		if keys.Total != 1 {
			t.Errorf("tenant b sees %d keys, want its own admin key only", keys.Total)
		}
		// a's record survived every attempt.
		got := a.call("GET", "/api/modules/"+mod+"/records/"+rec, a.admin, nil).want(200).json()
		if got["version"].(float64) != 1 {
			t.Errorf("a's record changed: %v", got)
		}
	})
}

func TestPagination(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("items", map[string]any{"name": "n", "type": "integer", "required": true},
			map[string]any{"name": "parity", "type": "enum", "options": []string{"even", "odd"}})
		const n = 23
		for i := range n {
			e.createRecord(mod, map[string]any{"n": i, "parity": []string{"even", "odd"}[i%2]})
		}
		base := "/api/modules/" + mod + "/records"
		for _, q := range []string{"limit=0", "limit=101", "limit=-1", "limit=abc", "page=0", "page=-3", "page=abc", "page=1.5", "sort=title", "filter[nope]=1", "filter[n]=abc"} {
			t.Run(q, func(t *testing.T) {
				e := e.on(t)
				r := e.call("GET", base+"?"+q, e.admin, nil).want(http.StatusBadRequest)
				if r.errorCode() != "invalid_request" {
					t.Errorf("error %q, want invalid_request", r.errorCode())
				}
			})
		}

		type page struct {
			Data []struct {
				ID     string         `json:"id"`
				Fields map[string]any `json:"fields"`
			} `json:"data"`
			Total int `json:"total"`
			Page  int `json:"page"`
			Limit int `json:"limit"`
		}
		for _, sort := range []string{"", "created_at", "-created_at", "updated_at", "-updated_at"} {
			t.Run("sort="+sort, func(t *testing.T) {
				e := e.on(t)
				seen := map[string]bool{}
				var order []float64
				for p := 1; p <= 3; p++ {
					var pg page
					e.call("GET", fmt.Sprintf("%s?limit=10&page=%d&sort=%s", base, p, sort), e.admin, nil).want(200).decode(&pg)
					if pg.Total != n || pg.Page != p || pg.Limit != 10 {
						t.Fatalf("page %d: total %d page %d limit %d, want %d %d 10", p, pg.Total, pg.Page, pg.Limit, n, p)
					}
					if want := min(10, n-10*(p-1)); len(pg.Data) != want {
						t.Fatalf("page %d has %d records, want %d", p, len(pg.Data), want)
					}
					for _, r := range pg.Data {
						if seen[r.ID] {
							t.Fatalf("record %s on two pages", r.ID)
						}
						seen[r.ID] = true
						order = append(order, r.Fields["n"].(float64))
					}
				}
				if len(seen) != n {
					t.Fatalf("saw %d records, want %d", len(seen), n)
				}
				asc := sort == "created_at" || sort == "updated_at"
				for i := 1; i < len(order); i++ {
					if (order[i] > order[i-1]) != asc {
						t.Fatalf("order %v is not %s", order, map[bool]string{true: "ascending", false: "descending"}[asc])
					}
				}
			})
		}
		// Defaults, an empty page past the end, and filters with their total.
		var pg page
		e.call("GET", base, e.admin, nil).want(200).decode(&pg)
		if pg.Page != 1 || pg.Limit != 20 || len(pg.Data) != 20 || pg.Total != n {
			t.Errorf("defaults: page %d limit %d len %d total %d", pg.Page, pg.Limit, len(pg.Data), pg.Total)
		}
		e.call("GET", base+"?page=9", e.admin, nil).want(200).decode(&pg)
		if len(pg.Data) != 0 || pg.Total != n {
			t.Errorf("past the end: len %d total %d", len(pg.Data), pg.Total)
		}
		e.call("GET", base+"?filter[parity]=odd&limit=100", e.admin, nil).want(200).decode(&pg)
		if pg.Total != n/2 || len(pg.Data) != n/2 {
			t.Errorf("filter parity=odd: total %d len %d, want %d", pg.Total, len(pg.Data), n/2)
		}
		e.call("GET", base+"?filter[n]=7", e.admin, nil).want(200).decode(&pg)
		if pg.Total != 1 || len(pg.Data) != 1 || pg.Data[0].Fields["n"].(float64) != 7 {
			t.Errorf("filter n=7: %+v", pg)
		}
		// Deletes keep the total exact.
		e.call("DELETE", base+"/"+pg.Data[0].ID, e.admin, nil).want(200)
		e.call("GET", base, e.admin, nil).want(200).decode(&pg)
		if pg.Total != n-1 {
			t.Errorf("total after delete %d, want %d", pg.Total, n-1)
		}
	})
}

func TestRecordValidation(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		base := "/api/modules/" + mod + "/records"
		rec := e.createRecord(mod, map[string]any{"title": "a"})

		cases := []struct {
			name   string
			method string
			body   any
			field  string
		}{
			{"missing required", "POST", map[string]any{"fields": map[string]any{"qty": 1}}, "fields.title"},
			{"unknown field", "POST", map[string]any{"fields": map[string]any{"title": "a", "colour": "red"}}, "fields.colour"},
			{"string as integer", "POST", map[string]any{"fields": map[string]any{"title": "a", "qty": "3"}}, "fields.qty"},
			{"fraction as integer", "POST", map[string]any{"fields": map[string]any{"title": "a", "qty": 1.5}}, "fields.qty"},
			{"number", "POST", map[string]any{"fields": map[string]any{"title": "a", "price": "9.5"}}, "fields.price"},
			{"boolean", "POST", map[string]any{"fields": map[string]any{"title": "a", "paid": "yes"}}, "fields.paid"},
			{"datetime", "POST", map[string]any{"fields": map[string]any{"title": "a", "due": "tomorrow"}}, "fields.due"},
			{"email", "POST", map[string]any{"fields": map[string]any{"title": "a", "contact": "not-an-address"}}, "fields.contact"},
			{"url", "POST", map[string]any{"fields": map[string]any{"title": "a", "site": "ftp://x"}}, "fields.site"},
			{"enum", "POST", map[string]any{"fields": map[string]any{"title": "a", "size": "xl"}}, "fields.size"},
			{"state outside states", "POST", map[string]any{"fields": map[string]any{"title": "a", "status": "lost"}}, "fields.status"},
			{"forbidden transition", "PATCH", map[string]any{"fields": map[string]any{"status": "shipped"}}, "fields.status"},
			{"required removed", "PATCH", map[string]any{"fields": map[string]any{"title": nil}}, "fields.title"},
			{"fields not an object", "POST", map[string]any{"fields": "x"}, "fields"},
			// PostgreSQL's jsonb cannot hold U+0000: both databases refuse it alike.
			{"NUL in a string", "POST", map[string]any{"fields": map[string]any{"title": "a\x00b"}}, "fields.title"},
			{"NUL in custom data", "PATCH", map[string]any{"custom_data": map[string]any{"note": []any{"a\x00"}}}, "custom_data.note[0]"},
			// Numbers beyond float64 (and PostgreSQL's numeric) range.
			{"huge number", "POST", map[string]any{"fields": map[string]any{"title": "a"}, "custom_data": map[string]any{"x": json.Number("1e999999")}}, "custom_data.x"},
			{"number that underflows", "POST", map[string]any{"fields": map[string]any{"title": "a", "price": json.Number("1e-20000")}}, "fields.price"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e := e.on(t)
				p := base
				if c.method == "PATCH" {
					p = base + "/" + rec
				}
				r := e.call(c.method, p, e.admin, c.body).want(http.StatusUnprocessableEntity)
				var body struct {
					Error   string `json:"error"`
					Details []struct{ Field, Message string }
				}
				r.decode(&body)
				if body.Error != "validation_failed" || len(body.Details) == 0 || body.Details[0].Field != c.field {
					t.Errorf("body %s, want validation_failed naming %s", r.body, c.field)
				}
			})
		}

		big := `{"fields":{"title":"` + strings.Repeat("x", 1<<20) + `"}}`
		for _, c := range []struct {
			name        string
			body        string
			contentType string
			status      int
			code        string
		}{
			{"malformed JSON", `{"fields":`, "application/json", 400, "invalid_request"},
			{"null body", `null`, "application/json", 400, "invalid_request"},
			{"array body", `[{"fields":{"title":"a"}}]`, "application/json", 400, "invalid_request"},
			{"trailing garbage", `{"fields":{"title":"a"}} x`, "application/json", 400, "invalid_request"},
			{"unknown property", `{"fields":{"title":"a"},"extra":1}`, "application/json", 400, "invalid_request"},
			{"not JSON", `title=a`, "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
			{"no content type", `{"fields":{"title":"a"}}`, "", 415, "unsupported_media_type"},
			{"over 1 MiB", big, "application/json", 413, "payload_too_large"},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.on(t)
				r := e.call("POST", base, e.admin, c.body, "Content-Type", c.contentType).want(c.status)
				if r.errorCode() != c.code || r.json()["request_id"] == "" {
					t.Errorf("body %s, want %s with a request id", r.body, c.code)
				}
			})
		}
		// Nothing was written by any refused request, and the record is untouched.
		var l struct{ Total int }
		e.call("GET", base, e.admin, nil).want(200).decode(&l)
		if l.Total != 1 {
			t.Errorf("%d records after refused writes, want 1", l.Total)
		}
		got := e.call("GET", base+"/"+rec, e.admin, nil).want(200).json()
		if got["version"].(float64) != 1 {
			t.Errorf("record changed by refused writes: %v", got)
		}
	})
}

func TestRecordLifecycle(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		base := "/api/modules/" + mod + "/records"

		r := e.call("POST", base, e.admin, `{"fields":{"title":"a","qty":9007199254740993,"meta":{"a":{"b":1,"c":2}},"due":"2026-01-02T03:04:05Z","contact":"x@example.com","site":"https://example.com","size":"m","price":1.25,"paid":false},"custom_data":{"k":"v","n":{"x":1}}}`).want(201)
		if r.header.Get("ETag") != `"1"` || r.header.Get("X-Request-Id") == "" {
			t.Errorf("headers %v", r.header)
		}
		if !strings.Contains(string(r.body), `"qty":9007199254740993`) {
			t.Errorf("integer precision lost: %s", r.body)
		}
		created := r.json()
		id := created["id"].(string)
		if created["fields"].(map[string]any)["status"] != "new" {
			t.Errorf("status %v, want the initial state new", created["fields"])
		}
		if r.header.Get("Location") != base+"/"+id {
			t.Errorf("Location %q", r.header.Get("Location"))
		}

		// Merge patch: null removes, nested objects merge, others stay.
		r = e.call("PATCH", base+"/"+id, e.admin, `{"fields":{"qty":null,"meta":{"a":{"b":null,"d":3}},"status":"paid"},"custom_data":{"n":{"y":2},"k":null}}`, "If-Match", `"1"`).want(200)
		if r.header.Get("ETag") != `"2"` {
			t.Errorf("ETag %q, want \"2\"", r.header.Get("ETag"))
		}
		got := r.json()
		wantFields := map[string]any{"title": "a", "meta": map[string]any{"a": map[string]any{"c": 2.0, "d": 3.0}}, "status": "paid",
			"due": "2026-01-02T03:04:05Z", "contact": "x@example.com", "site": "https://example.com", "size": "m", "price": 1.25, "paid": false}
		if diff := cmp.Diff(wantFields, got["fields"]); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"n": map[string]any{"x": 1.0, "y": 2.0}}, got["custom_data"]); diff != "" {
			t.Errorf("custom_data (-want +got):\n%s", diff)
		}

		// Stale If-Match → 412 and nothing changes; a no-op patch keeps the version.
		e.call("PATCH", base+"/"+id, e.admin, `{"fields":{"title":"b"}}`, "If-Match", `"1"`).want(412)
		r = e.call("PATCH", base+"/"+id, e.admin, `{"fields":{"title":"a"}}`).want(200)
		if r.json()["version"].(float64) != 2 {
			t.Errorf("no-op patch changed the version: %s", r.body)
		}
		r = e.call("GET", base+"/"+id, e.admin, nil).want(200)
		if r.header.Get("ETag") != `"2"` || r.json()["fields"].(map[string]any)["title"] != "a" {
			t.Errorf("after 412: %s", r.body)
		}
		e.call("PATCH", base+"/"+id, e.admin, `{"fields":{"status":"shipped"}}`, "If-Match", `W/"2"`).want(200)

		r = e.call("DELETE", base+"/"+id, e.admin, nil).want(200)
		if diff := cmp.Diff(map[string]any{"id": id, "deleted": true}, r.json()); diff != "" {
			t.Errorf("delete body (-want +got):\n%s", diff)
		}
		e.call("GET", base+"/"+id, e.admin, nil).want(404)
		e.call("DELETE", base+"/"+id, e.admin, nil).want(404)
		e.call("PATCH", base+"/"+id, e.admin, `{"fields":{}}`).want(404)
		e.call("GET", "/api/modules/mod_missing/records", e.admin, nil).want(404)
	})
}

// PostgreSQL stores no U+0000 and no number beyond its numeric range; both
// databases refuse them alike with a 4xx, never a 500.
func TestUnstorableValuesAreRefusedAlike(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		wantDetails(t, e.call("POST", "/api/admin/modules", e.admin, map[string]any{"slug": "x", "name": "a\x00b", "fields": []any{}}), "name")
		wantDetails(t, e.call("POST", "/api/admin/keys", e.admin, map[string]any{"name": "k", "permissions": map[string]any{"mod\x00": []string{"read"}}}), "permissions.mod\\u0000")
		wantDetails(t, e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{"url": "https://hooks.example.com", "events": []string{"record_created"}, "description": "\x00"}), "description")
		for _, q := range []string{"filter[title]=a%00b", "filter[price]=1e-20000", "filter[price]=1e999999"} {
			if r := e.call("GET", "/api/modules/"+mod+"/records?"+q, e.admin, nil); r.status != 400 {
				t.Errorf("%s: %d %s, want 400", q, r.status, r.body)
			}
		}
		if total := e.call("GET", "/api/modules/"+mod+"/records", e.admin, nil).want(200).json()["total"]; total != float64(0) {
			t.Errorf("%v records after refused writes", total)
		}
	})
}

// TestRecordNestingIsBoundedAlike: a value of fields or custom_data nests
// at most models.MaxJSONDepth levels, on both databases alike; SQLite's
// JSON functions stop at 1,000 levels, and a deeper stored value made
// every filtered list of its module fail. What is refused leaves the
// filtered list answering.
func TestRecordNestingIsBoundedAlike(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		base := "/api/modules/" + mod + "/records"
		rec := e.createRecord(mod, map[string]any{"title": "a"})

		at := models.MaxJSONDepth
		e.call("POST", base, e.admin, `{"fields":{"title":"a","meta":`+nested(at)+`},"custom_data":{"x":`+nested(at)+`}}`).want(201)
		for _, depth := range []int{at + 1, 1001} {
			t.Run(fmt.Sprint(depth), func(t *testing.T) {
				e := e.on(t)
				refusedOn(t, e.call("POST", base, e.admin, `{"fields":{"title":"a","meta":`+nested(depth)+`}}`), "fields.meta", at)
				refusedOn(t, e.call("POST", base, e.admin, `{"fields":{"title":"a"},"custom_data":{"x":`+nested(depth)+`}}`), "custom_data.x", at)
				refusedOn(t, e.call("PATCH", base+"/"+rec, e.admin, `{"fields":{"meta":`+nested(depth)+`}}`), "fields.meta", at)
				refusedOn(t, e.call("PATCH", base+"/"+rec, e.admin, `{"custom_data":{"x":{"y":`+nested(depth-1)+`}}}`), "custom_data.x", at)
			})
		}
		if total := e.call("GET", base+"?filter[title]=a", e.admin, nil).want(200).json()["total"]; total != float64(2) {
			t.Errorf("filtered total %v, want 2", total)
		}
	})
}

// TestRecordSizeIsBoundedAfterMerges: merge PATCHes, each well within the
// body limit, cannot grow a record's custom_data or fields past
// models.MaxRecordJSONBytes; the refused PATCH changes nothing.
func TestRecordSizeIsBoundedAfterMerges(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		base := "/api/modules/" + mod + "/records"
		quarter := strings.Repeat("x", models.MaxRecordJSONBytes/4)
		rec := e.createRecord(mod, map[string]any{"title": quarter})
		for _, k := range []string{"a", "b", "c"} {
			e.call("PATCH", base+"/"+rec, e.admin, map[string]any{"custom_data": map[string]any{k: quarter}}).want(200)
		}
		refusedOn(t, e.call("PATCH", base+"/"+rec, e.admin, map[string]any{"custom_data": map[string]any{"d": quarter}}), "custom_data", models.MaxRecordJSONBytes)
		for _, k := range []string{"a", "b"} {
			e.call("PATCH", base+"/"+rec, e.admin, map[string]any{"fields": map[string]any{"meta": map[string]any{k: quarter}}}).want(200)
		}
		refusedOn(t, e.call("PATCH", base+"/"+rec, e.admin, map[string]any{"fields": map[string]any{"meta": map[string]any{"a": quarter, "b": quarter, "c": quarter}}}), "fields", models.MaxRecordJSONBytes)
		if v := e.call("GET", base+"/"+rec, e.admin, nil).want(200).json()["version"]; v != float64(6) {
			t.Errorf("version %v after the refused PATCHes, want 6", v)
		}
	})
}
