package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestPathIDWithoutPrefix: a value without the prefix of the id a route
// takes (a module's slug where its id belongs, most often) answers 404
// saying what the route takes, never repeating what may be a secret; an id
// with its prefix that names nothing stays a plain 404.
func TestPathIDWithoutPrefix(t *testing.T) {
	e := newEnv(t, models.SQLite)
	mod := e.createModule("orders", shopOrderFields...)
	rec := e.createRecord(mod, map[string]any{"order_id": "A1"})
	ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
	const secretLike = "rh_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"

	for _, c := range []struct {
		method, path string
		want         string
	}{
		{"GET", "/api/modules/orders/records",
			`no module with id "orders"; module routes take the module's id (mod_…), not its slug — GET /api/modules lists them`},
		{"POST", "/api/modules/orders/records",
			`no module with id "orders"; module routes take the module's id (mod_…), not its slug — GET /api/modules lists them`},
		{"GET", "/api/admin/modules/orders",
			`no module with id "orders"; module routes take the module's id (mod_…), not its slug — GET /api/modules lists them`},
		{"GET", "/api/modules/" + mod + "/records/a1",
			`no record with id "a1"; record ids start with rec_ — GET /api/modules/{id}/records lists them`},
		{"GET", "/api/admin/keys/" + secretLike,
			"no key with that id; key routes take the key's id (key_…), not the key itself — GET /api/admin/keys lists them"},
		{"GET", "/api/admin/webhook-endpoints/hooks-a",
			`no webhook endpoint with id "hooks-a"; endpoint ids start with whe_ — GET /api/admin/webhook-endpoints lists them`},
		{"GET", "/api/admin/webhook-endpoints/" + ep + "/recoveries/1",
			`no recovery with id "1"; recovery ids start with rcv_, as POST …/recover answered`},
		{"GET", "/api/admin/webhook-deliveries/42",
			`no webhook delivery with id "42"; delivery ids start with whd_ — GET /api/admin/webhook-deliveries lists them`},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			var body any
			if c.method == "POST" {
				body = map[string]any{"fields": map[string]any{"order_id": "B2"}}
			}
			r := e.on(t).call(c.method, c.path, e.admin, body).want(http.StatusNotFound)
			m := wantErrorBody(t, r, "not_found")
			if got := m["message"]; got != c.want {
				t.Errorf("message %q, want %q", got, c.want)
			}
			if strings.Contains(string(r.body), secretLike) {
				t.Errorf("the answer repeats the secret-like value: %s", r.body)
			}
		})
	}

	// The ids themselves still work, and a well-formed id that names
	// nothing is a plain 404.
	e.call("GET", "/api/modules/"+mod+"/records/"+rec, e.admin, nil).want(http.StatusOK)
	r := e.call("GET", "/api/admin/modules/mod_00000000000000000000000000", e.admin, nil).want(http.StatusNotFound)
	if m := wantErrorBody(t, r, "not_found"); m["message"] != "not found" {
		t.Errorf("missing module with a well-formed id: message %q, want \"not found\"", m["message"])
	}
}
