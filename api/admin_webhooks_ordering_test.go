package api_test

import (
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestWebhookEndpointOrdering: ordering through the admin API: "none" by
// default, "record" set on create or PATCH and shown by GET, anything else
// 422 naming ordering.
func TestWebhookEndpointOrdering(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		const path = "/api/admin/webhook-endpoints"
		body := func(ordering any) map[string]any {
			b := map[string]any{"url": "https://hooks.example.com/o", "events": []string{"record_updated"}}
			if ordering != nil {
				b["ordering"] = ordering
			}
			return b
		}
		for _, bad := range []any{"fifo", "", "Record", 1} {
			wantDetails(t, e.on(t).call("POST", path, e.admin, body(bad)), "ordering")
		}
		ep := e.createEndpoint(body(nil))
		id := ep["id"].(string)
		if ep["ordering"] != "none" {
			t.Errorf("default ordering %v, want none", ep["ordering"])
		}
		if got := e.call("PATCH", path+"/"+id, e.admin, map[string]any{"ordering": "record"}).want(200).json()["ordering"]; got != "record" {
			t.Errorf("PATCH answered ordering %v, want record", got)
		}
		if got := e.call("GET", path+"/"+id, e.admin, nil).want(200).json()["ordering"]; got != "record" {
			t.Errorf("GET ordering %v, want record", got)
		}
		wantDetails(t, e.call("PATCH", path+"/"+id, e.admin, map[string]any{"ordering": "per-record"}), "ordering")
		if got := e.createEndpoint(body("record"))["ordering"]; got != "record" {
			t.Errorf("created with ordering %v, want record", got)
		}
	})
}
