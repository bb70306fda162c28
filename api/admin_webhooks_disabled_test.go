package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/recordhub/recordhub/models"
)

// TestEndpointDisabledThroughAPI: endpoints subscribe to endpoint_disabled
// like to the record events; PATCH enabled false writes the event, whose
// body matches the WebhookEndpointDisabledEvent schema of openapi.yaml;
// a skipped delivery is listed and read like any row (the responses are
// checked against openapi.yaml by the env).
func TestEndpointDisabledThroughAPI(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	schema := doc.Components.Schemas["WebhookEndpointDisabledEvent"].Value
	validate := func(body map[string]any) error {
		return schema.VisitJSON(body, openapi3.EnableJSONSchema2020(), openapi3.VisitAsRequest())
	}
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("tickets", map[string]any{"name": "title", "type": "string"})
		watcher := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/w", "events": []string{"endpoint_disabled"}, "module_ids": []string{mod}})
		if got := watcher["events"]; len(got.([]any)) != 1 || got.([]any)[0] != "endpoint_disabled" {
			t.Errorf("events %v, want [endpoint_disabled]", got)
		}
		r := e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{"url": "https://hooks.example.com/x", "events": []string{"endpoint_enabled"}}).want(422)
		if !strings.Contains(string(r.body), "endpoint_disabled") {
			t.Errorf("the refusal does not list endpoint_disabled: %s", r.body)
		}

		id := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		e.call("PATCH", "/api/admin/webhook-endpoints/"+id, e.admin, map[string]any{"enabled": false}).want(200)
		e.call("PATCH", "/api/admin/webhook-endpoints/"+id, e.admin, map[string]any{"enabled": false}).want(200)
		evs, err := e.store.PendingEvents(t.Context(), 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Type != models.EventEndpointDisabled {
			t.Fatalf("pending events %+v, want one endpoint_disabled", evs)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(evs[0].Payload), &body); err != nil {
			t.Fatal(err)
		}
		if err := validate(body); err != nil {
			t.Errorf("body does not match WebhookEndpointDisabledEvent: %v\n%s", err, evs[0].Payload)
		}
		if body["reason"] != "manual" || body["endpoint"].(map[string]any)["id"] != id {
			t.Errorf("body %s, want reason manual about %s", evs[0].Payload, id)
		}
		body["reason"] = "tired"
		if validate(body) == nil {
			t.Error("an unknown reason passes WebhookEndpointDisabledEvent")
		}

		// The dispatcher records a skipped delivery as the store does here.
		ep, err := e.store.GetEndpoint(t.Context(), e.tenantID, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.InsertSkippedDeliveries(t.Context(), &evs[0], []models.WebhookEndpoint{*ep}); err != nil {
			t.Fatal(err)
		}
		list := e.call("GET", "/api/admin/webhook-deliveries?error=endpoint_disabled&endpoint_id="+id, e.admin, nil).want(200).json()
		rows := list["data"].([]any)
		if len(rows) != 1 {
			t.Fatalf("listed %v, want the skipped row", list)
		}
		row := rows[0].(map[string]any)
		if row["attempt"] != float64(0) || row["finished_at"] == nil || row["succeeded"] != false || row["workflow_id"] != "" {
			t.Errorf("skipped row %v", row)
		}
		full := e.call("GET", "/api/admin/webhook-deliveries/"+row["id"].(string), e.admin, nil).want(200).json()
		if full["request_body"] != "" || len(full["request_headers"].(map[string]any)) != 0 || full["request_url"] != "https://hooks.example.com/a" {
			t.Errorf("skipped row in full %v, want no request sent to the endpoint's URL", full)
		}
	})
}
