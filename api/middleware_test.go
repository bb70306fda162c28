package api_test

import (
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestSecretAnswersAreNotStored: every answer that holds a key, a signing
// secret, an inbound token or a custom header's value says
// Cache-Control: no-store, so that no cache along the way keeps it.
func TestSecretAnswersAreNotStored(t *testing.T) {
	e := newEnv(t, models.SQLite)
	mod := e.createModule("orders", shopOrderFields...)
	keyID, _ := e.createKey(map[string]any{"name": "k"})
	ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}, "headers": map[string]string{"Authorization": "Bearer x"}})["id"].(string)
	const admin = "/api/admin/"
	inbound := admin + "modules/" + mod + "/inbound-webhook"
	for _, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"POST", admin + "keys", map[string]any{"name": "k2"}, 201},
		{"POST", admin + "keys/" + keyID + "/rotate", nil, 200},
		{"POST", admin + "webhook-endpoints", map[string]any{"url": "https://hooks.example.com/b", "events": []string{"record_created"}}, 201},
		{"GET", admin + "webhook-endpoints/" + ep + "/secret", nil, 200},
		{"GET", admin + "webhook-endpoints/" + ep + "/headers", nil, 200},
		{"POST", admin + "webhook-endpoints/" + ep + "/rotate-secret", nil, 200},
		{"PUT", inbound, orderConfig(nil), 201},
		{"GET", inbound, nil, 200},
		{"POST", inbound + "/rotate-token", nil, 200},
		// A refused call on such a route is not kept either.
		{"GET", admin + "webhook-endpoints/whe_missing/secret", nil, 404},
		{"GET", admin + "webhook-endpoints/missing/headers", nil, 404},
	} {
		r := e.call(c.method, c.path, e.admin, c.body).want(c.status)
		if got := r.header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", c.method, c.path, got)
		}
	}
}

// TestKeyWithoutBearer: a key sent without the Bearer scheme, the usual
// first mistake, is refused with how to send it, and the answer never
// repeats the header.
func TestKeyWithoutBearer(t *testing.T) {
	e := newEnv(t, models.SQLite)
	const how = `send the key as "Authorization: Bearer rh_…"`
	for _, c := range []struct{ name, header string }{
		{"bare key", e.admin},
		{"token scheme", "Token " + e.admin},
		{"bearer without key", "Bearer "},
		{"no header", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.on(t).call("GET", "/api/modules", "", nil, "Authorization", c.header)
			wantUnauthorized(t, r, "unauthorized")
			if msg, _ := r.json()["message"].(string); !strings.HasSuffix(msg, how) {
				t.Errorf("message %q, want it to end with %q", msg, how)
			}
			if strings.Contains(string(r.body), e.admin) {
				t.Errorf("the answer repeats the key: %s", r.body)
			}
		})
	}
	// The same key as a bearer token passes.
	e.call("GET", "/api/modules", e.admin, nil).want(200)
}
