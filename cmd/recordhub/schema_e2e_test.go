//go:build !noembedtemporal

package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestSchemaEndToEnd: a module with a field of every type and a status
// field, an endpoint taking every event type, and every type made to
// happen (a create, an update that moves the status, a custom_data change,
// a resync's snapshot, a delete, another endpoint disabled): each body the
// receiver gets validates, as it arrives, against the document the API
// serves at that moment, checked with santhosh-tekuri/jsonschema (formats
// asserted); the same body broken does not. `webhooks schema` prints the
// same document, by slug or id.
func TestSchemaEndToEnd(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			cfg := webhookConfig(t, d)
			base, stop := startService(t, cfg, io.Discard)
			key := cfg.BootstrapAdminKey

			mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "typed", "name": "Typed", "fields": []any{
				map[string]any{"name": "title", "type": "string", "required": true},
				map[string]any{"name": "notes", "type": "text"},
				map[string]any{"name": "count", "type": "integer"},
				map[string]any{"name": "price", "type": "number"},
				map[string]any{"name": "done", "type": "boolean"},
				map[string]any{"name": "due", "type": "datetime"},
				map[string]any{"name": "email", "type": "email"},
				map[string]any{"name": "site", "type": "url"},
				map[string]any{"name": "size", "type": "enum", "options": []string{"s", "m"}},
				map[string]any{"name": "stage", "type": "status", "states": []string{"new", "paid"}, "initial": "new"},
				map[string]any{"name": "extra", "type": "json"},
			}})
			modID := mod["id"].(string)
			schemaURL := base + "/api/admin/modules/" + modID + "/event-schemas"

			r := newReceiver(t, 0)
			r.check = schemaCheck(base, key)
			ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": r.srv.URL, "events": models.EventTypes})
			r.mu.Lock()
			r.secret = ep["secret"].(string)
			r.mu.Unlock()
			other := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": "http://127.0.0.1:1/never", "events": []string{"record_created"}, "enabled": false})

			arrived := func(event string) {
				t.Helper()
				storetest.Eventually(t, 30*time.Second, "a "+event+" delivery", func() bool {
					return slices.ContainsFunc(r.received(), func(g received) bool { return g.event == event })
				})
			}
			rec := jsonCall(t, "POST", base+"/api/modules/"+modID+"/records", key, map[string]any{"fields": map[string]any{
				"title": "Desk", "notes": "oak", "count": 3, "price": 120.5, "done": false, "due": "2030-01-02T03:04:05Z",
				"email": "a@example.com", "site": "https://example.com/desk", "size": "s", "extra": map[string]any{"legs": 4},
			}, "custom_data": map[string]any{"source": "shop"}})
			recURL := base + "/api/modules/" + modID + "/records/" + rec["id"].(string)
			jsonCall(t, "PATCH", recURL, key, map[string]any{"fields": map[string]any{"title": "Standing desk", "count": nil, "stage": "paid", "extra": []any{"a", 1}}})
			jsonCall(t, "PATCH", recURL, key, map[string]any{"custom_data": map[string]any{"batch": 7}})
			for _, e := range []string{"record_created", "record_updated", "status_change", "custom_data_updated"} {
				arrived(e)
			}
			jsonCall(t, "POST", base+"/api/admin/webhook-endpoints/"+ep["id"].(string)+"/resync", key, map[string]any{})
			arrived("record_snapshot")
			jsonCall(t, "DELETE", recURL, key, nil)
			arrived("record_deleted")
			// An endpoint created disabled was never enabled: enable it, then
			// disable it, which tells the tenant's other endpoints.
			jsonCall(t, "PATCH", base+"/api/admin/webhook-endpoints/"+other["id"].(string), key, map[string]any{"enabled": true})
			jsonCall(t, "PATCH", base+"/api/admin/webhook-endpoints/"+other["id"].(string), key, map[string]any{"enabled": false})
			arrived("endpoint_disabled")

			// Every event type the document describes was delivered, and
			// every body validated against the document of its moment.
			var doc struct {
				OneOf []struct {
					Ref string `json:"$ref"`
				} `json:"oneOf"`
			}
			if body, st := getRaw(t, schemaURL, key); st != 200 || json.Unmarshal([]byte(body), &doc) != nil {
				t.Fatalf("GET %s: %d %s", schemaURL, st, body)
			}
			got := r.received()
			for _, def := range doc.OneOf {
				typ := strings.TrimPrefix(def.Ref, "#/$defs/")
				if !slices.ContainsFunc(got, func(g received) bool { return g.event == typ }) {
					t.Errorf("no %s delivered, a type the document describes", typ)
				}
			}
			for _, g := range got {
				if !g.verified {
					t.Errorf("%s: signature did not verify", g.event)
				}
				if g.checked != nil {
					t.Errorf("%s body does not validate against the served schema: %v\nbody: %s", g.event, g.checked, g.raw)
				}
			}
			// The check is not vacuous: the same bodies, broken, fail it.
			for _, g := range got {
				if g.body["record"] == nil {
					continue
				}
				var broken map[string]any
				json.Unmarshal(g.raw, &broken)
				broken["record"].(map[string]any)["fields"].(map[string]any)["size"] = "xl"
				b, _ := json.Marshal(broken)
				if err := validateBody(schemaURL, key, b); err == nil {
					t.Errorf("a %s body with a value outside the enum validates", g.event)
				}
			}

			// The CLI prints the same document, by slug and by id.
			env := map[string]string{"RECORDHUB_ADMIN_KEY": key, "RECORDHUB_API_URL": base}
			want, _ := getRaw(t, schemaURL, key)
			for _, name := range []string{"typed", modID} {
				out, _, err := runWithEnv(t.Context(), env, "webhooks", "schema", name)
				if err != nil {
					t.Fatalf("webhooks schema %s: %v", name, err)
				}
				var a, b any
				json.Unmarshal([]byte(out), &a)
				json.Unmarshal([]byte(want), &b)
				if diff := cmp.Diff(b, a); diff != "" || !json.Valid([]byte(out)) {
					t.Errorf("webhooks schema %s printed another document (-api +cli):\n%s", name, diff)
				}
			}
			if _, _, err := runWithEnv(t.Context(), env, "webhooks", "schema", "nosuch"); err == nil || !strings.Contains(err.Error(), "nosuch") {
				t.Errorf("webhooks schema of an unknown slug: %v", err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
