package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestWebhookEndpointURLCharacters: a URL holding a character RFC 3986
// does not allow is refused on create and PATCH with 422 invalid_url
// naming the character and its percent-encoding; the percent-encoded URL
// is accepted. An endpoint stored before the rule keeps its URL and can
// still be changed in other ways.
func TestWebhookEndpointURLCharacters(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		id := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		for _, tt := range []struct{ url, want string }{
			{"https://hooks.example.com/p?q=a b", "a space at character 32, which a URL may not hold as it is: percent-encode it as %20"},
			{"https://ho st.example.com/", "a space at character 11"},
			{"https://hooks.example.com/p\nq", "the control character U+000A"},
			{"https://hooks.example.com/p?q=<x>", "'<' at character 31"},
			{"https://hooks.example.com/{id}", "percent-encode it as %7B"},
			{"https://hooks.example.com/p?a|b", "%7C"},
			{"https://hooks.example.com/100%", "write a literal \"%\" as %25"},
		} {
			t.Run(tt.url, func(t *testing.T) {
				e := e.on(t)
				for _, r := range []*resp{
					e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{"url": tt.url, "events": []string{"record_created"}}),
					e.call("PATCH", "/api/admin/webhook-endpoints/"+id, e.admin, map[string]any{"url": tt.url}),
				} {
					m := wantErrorBody(t, r.want(422), "invalid_url")
					if msg, _ := m["message"].(string); !strings.Contains(msg, tt.want) {
						t.Errorf("message %q, want it to contain %q", msg, tt.want)
					}
				}
			})
		}
		encoded := "https://hooks.example.com/p%20q?q=a%20b&r=%7Bid%7D"
		created := e.createEndpoint(map[string]any{"url": encoded, "events": []string{"record_created"}})
		if created["url"] != encoded {
			t.Errorf("created url %v, want %s", created["url"], encoded)
		}
		patched := e.call("PATCH", "/api/admin/webhook-endpoints/"+id, e.admin, map[string]any{"url": encoded}).want(200).json()
		if patched["url"] != encoded {
			t.Errorf("patched url %v, want %s", patched["url"], encoded)
		}

		// An endpoint saved before the rule (the store's create without a
		// URL check stands for it) keeps its URL.
		legacyURL := "https://hooks.example.com/p?q=a b"
		legacy, _, err := e.store.CreateEndpoint(context.Background(), e.tenantID, models.EndpointInput{URL: &legacyURL, Events: &[]string{"record_created"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		path := "/api/admin/webhook-endpoints/" + legacy.ID
		if got := e.call("GET", path, e.admin, nil).want(200).json()["url"]; got != legacyURL {
			t.Errorf("legacy url %v, want %q kept", got, legacyURL)
		}
		e.call("PATCH", path, e.admin, map[string]any{"description": "kept", "enabled": false}).want(200)
		wantErrorBody(t, e.call("PATCH", path, e.admin, map[string]any{"url": legacyURL}).want(422), "invalid_url")
		e.call("PATCH", path, e.admin, map[string]any{"url": "https://hooks.example.com/p?q=a%20b"}).want(200)
	})
}
