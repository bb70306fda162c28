package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// TestWebhookEndpointBrokerURLs: amqp, amqps and nats URLs are accepted on
// create and PATCH with their kind, the password masked in every answer
// and kept when the masked URL comes back; a malformed broker URL or an
// unknown placeholder answers 422 invalid_url saying what to change; a
// broker on loopback is refused like an HTTP receiver, naming the allow
// list.
func TestWebhookEndpointBrokerURLs(t *testing.T) {
	const password = "pa55-7f3e-secret"
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		rawURL := "amqp://app:" + password + "@rabbit.example.com/orders?exchange=records&routing_key={module}.{event_type}"
		masked := "amqp://app:****@rabbit.example.com/orders?exchange=records&routing_key={module}.{event_type}"
		created := e.createEndpoint(map[string]any{"url": rawURL, "events": []string{"record_created"}})
		id := created["id"].(string)
		if created["url"] != masked || created["kind"] != "amqp" {
			t.Errorf("created url %v, kind %v; want %s, amqp", created["url"], created["kind"], masked)
		}
		path := "/api/admin/webhook-endpoints/" + id
		quoted, _ := json.Marshal(masked)
		var answers []string
		for _, r := range []*resp{
			e.call("GET", path, e.admin, nil).want(200),
			e.call("GET", "/api/admin/webhook-endpoints", e.admin, nil).want(200),
			e.call("PATCH", path, e.admin, map[string]any{"url": masked, "description": "same login"}).want(200),
		} {
			answers = append(answers, string(r.body))
			if !strings.Contains(string(r.body), `"url":`+string(quoted)) {
				t.Errorf("answer %s: want the masked URL", r.body)
			}
		}
		for _, a := range answers {
			if strings.Contains(a, password) {
				t.Errorf("an answer shows the password: %s", a)
			}
		}
		ep, err := e.store.GetEndpoint(context.Background(), e.tenantID, id)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.store.EndpointURL(ep); err != nil || got != rawURL {
			t.Errorf("after a PATCH with the masked URL the URL in clear is %q, %v; want the password kept", got, err)
		}

		nats := e.call("PATCH", path, e.admin, map[string]any{"url": "nats://nats.example.com:4222/records.{module}.{event_type}"}).want(200).json()
		if nats["kind"] != "nats" {
			t.Errorf("kind %v, want nats", nats["kind"])
		}

		for _, tc := range []struct{ url, says string }{
			{"amqp://rabbit.example.com/?exchange=records", "needs routing_key"},
			{"amqp://rabbit.example.com/?routing_key={record_id}", `unknown placeholder "{record_id}"`},
			{"nats://nats.example.com/records.*", "wildcard"},
			{"nats://nats.example.com", "JetStream subject"},
			{"amqp://app:****@other.example.com/?routing_key=x", "mask"},
		} {
			for _, r := range []*resp{
				e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{"url": tc.url, "events": []string{"record_created"}}),
				e.call("PATCH", path, e.admin, map[string]any{"url": tc.url}),
			} {
				m := wantErrorBody(t, r.want(422), "invalid_url")
				if msg, _ := m["message"].(string); !strings.Contains(msg, tc.says) {
					t.Errorf("%s: message %q, want it to say %q", tc.url, msg, tc.says)
				}
			}
		}
	})

	e := newEnv(t, models.SQLite, withCheckURL(func(ctx context.Context, rawURL string) error { return activities.CheckURL(ctx, rawURL, nil) }))
	for _, u := range []string{"amqp://guest:guest@127.0.0.1:5672/?routing_key=x", "nats://localhost:4222/records", "nats://10.1.2.3/records"} {
		m := wantErrorBody(t, e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{"url": u, "events": []string{"record_created"}}).want(422), "invalid_url")
		if msg, _ := m["message"].(string); !strings.Contains(msg, "RECORDHUB_WEBHOOK_ALLOW_CIDRS") || strings.Contains(msg, "guest:guest") {
			t.Errorf("%s: message %q, want it to name RECORDHUB_WEBHOOK_ALLOW_CIDRS and not the login", u, msg)
		}
	}
}
