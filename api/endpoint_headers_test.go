package api_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// TestWebhookEndpointHeaders: custom headers are taken on create and
// PATCH, answered masked by create, GET, list and PATCH, in clear only by
// GET …/headers; a PATCH with headers replaces them, null and {} remove
// them, one without keeps them. No answer nor access log holds a value.
func TestWebhookEndpointHeaders(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		const token, apiKey = "Bearer gw-5e0c7d", "ak-93ab1f"
		secretish := func(what string, body []byte) {
			t.Helper()
			if s := string(body); strings.Contains(s, "gw-5e0c7d") || strings.Contains(s, apiKey) {
				t.Errorf("%s holds a custom header value: %s", what, s)
			}
		}
		masked := map[string]any{"Authorization": models.HeaderMask, "X-Api-Key": models.HeaderMask}

		r := e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{
			"url": "https://hooks.example.com/a", "events": []string{"record_created"},
			"headers": map[string]string{"authorization": token, "x-api-key": apiKey},
		}).want(201)
		secretish("create", r.body)
		created := r.json()
		if diff := cmp.Diff(created["headers"], any(masked)); diff != "" {
			t.Errorf("create headers (-got +want):\n%s", diff)
		}
		path := "/api/admin/webhook-endpoints/" + created["id"].(string)

		for _, p := range []string{path, path + "?include=stats", "/api/admin/webhook-endpoints", "/api/admin/webhook-endpoints?include=stats"} {
			r := e.call("GET", p, e.admin, nil).want(200)
			secretish("GET "+p, r.body)
			got := r.json()
			if data, ok := got["data"].([]any); ok {
				got = data[0].(map[string]any)
			}
			if diff := cmp.Diff(got["headers"], any(masked)); diff != "" {
				t.Errorf("GET %s headers (-got +want):\n%s", p, diff)
			}
		}
		r = e.call("PATCH", path, e.admin, map[string]any{"description": "no headers named"}).want(200)
		secretish("PATCH", r.body)
		if diff := cmp.Diff(r.json()["headers"], any(masked)); diff != "" {
			t.Errorf("PATCH without headers (-got +want):\n%s", diff)
		}
		r = e.call("POST", path+"/rotate-secret", e.admin, nil).want(200)
		secretish("rotate-secret", r.body)

		revealed := e.call("GET", path+"/headers", e.admin, nil).want(200).json()
		if diff := cmp.Diff(revealed, map[string]any{"headers": map[string]any{"Authorization": token, "X-Api-Key": apiKey}}); diff != "" {
			t.Errorf("reveal (-got +want):\n%s", diff)
		}

		r = e.call("PATCH", path, e.admin, map[string]any{"headers": map[string]string{"X-Other": "v2"}}).want(200)
		if diff := cmp.Diff(r.json()["headers"], any(map[string]any{"X-Other": models.HeaderMask})); diff != "" {
			t.Errorf("PATCH replacing (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(e.call("GET", path+"/headers", e.admin, nil).want(200).json()["headers"], any(map[string]any{"X-Other": "v2"})); diff != "" {
			t.Errorf("reveal after replacing (-got +want):\n%s", diff)
		}
		for _, clear := range []string{`{"headers": null}`, `{"headers": {}}`} {
			e.call("PATCH", path, e.admin, map[string]any{"headers": map[string]string{"X-Again": "v3"}}).want(200)
			r = e.call("PATCH", path, e.admin, clear).want(200)
			if diff := cmp.Diff(r.json()["headers"], any(map[string]any{})); diff != "" {
				t.Errorf("PATCH %s (-got +want):\n%s", clear, diff)
			}
			if diff := cmp.Diff(e.call("GET", path+"/headers", e.admin, nil).want(200).json(), map[string]any{"headers": map[string]any{}}); diff != "" {
				t.Errorf("reveal after %s (-got +want):\n%s", clear, diff)
			}
		}

		e.call("GET", "/api/admin/webhook-endpoints/whe_missing/headers", e.admin, nil).want(404)
		e.flushLogs()
		secretish("access logs", e.call("GET", "/api/admin/access-logs?limit=100", e.admin, nil).want(200).body)
	})
}

// TestWebhookEndpointHeadersRefused: each kind of bad header answers 422
// validation_failed with a detail naming it, on create and on PATCH.
func TestWebhookEndpointHeadersRefused(t *testing.T) {
	e := newEnv(t, models.SQLite)
	path := "/api/admin/webhook-endpoints/" + e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
	many := map[string]string{}
	for i := range 21 {
		many["X-H"+strings.Repeat("a", i)] = "v"
	}
	for _, c := range []struct {
		name    string
		headers any
		field   string
	}{
		{"not an object", []string{"Authorization: x"}, "headers"},
		{"a number value", map[string]any{"X-Key": 1}, "headers"},
		{"too many", many, "headers"},
		{"not a token", map[string]string{"X Key": "v"}, "headers.X Key"},
		{"hop-by-hop", map[string]string{"Connection": "close"}, "headers.Connection"},
		{"host", map[string]string{"Host": "evil.example"}, "headers.Host"},
		{"content-type", map[string]string{"Content-Type": "text/plain"}, "headers.Content-Type"},
		{"user-agent", map[string]string{"User-Agent": "me"}, "headers.User-Agent"},
		{"signature", map[string]string{"X-Webhook-Signature": "sha256=00"}, "headers.X-Webhook-Signature"},
		{"standard webhooks", map[string]string{"webhook-id": "msg_1"}, "headers.webhook-id"},
		{"duplicate by case", map[string]string{"X-Key": "a", "x-KEY": "b"}, "headers.x-KEY"},
		// CGI and WSGI receivers read "_" as "-": these would join the
		// headers recordhub sets.
		{"signature with underscores", map[string]string{"X_Webhook_Signature": "sha256=00"}, "headers.X_Webhook_Signature"},
		{"user-agent with an underscore", map[string]string{"User_Agent": "me"}, "headers.User_Agent"},
		{"standard webhooks with an underscore", map[string]string{"Webhook_Id": "msg_1"}, "headers.Webhook_Id"},
		{"duplicate by underscore", map[string]string{"X-Key": "a", "X_Key": "b"}, "headers.X_Key"},
		{"CRLF", map[string]string{"X-Key": "a\r\nX-Injected: 1"}, "headers.X-Key"},
		{"NUL", map[string]string{"X-Key": "a\u0000"}, "headers.X-Key"},
		{"long value", map[string]string{"X-Key": strings.Repeat("v", 1025)}, "headers.X-Key"},
		{"the mask sent back", map[string]string{"Authorization": models.HeaderMask}, "headers.Authorization"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.on(t)
			wantDetails(t, e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{
				"url": "https://hooks.example.com/b", "events": []string{"record_created"}, "headers": c.headers,
			}), c.field)
			wantDetails(t, e.call("PATCH", path, e.admin, map[string]any{"headers": c.headers}), c.field)
		})
	}
	if got := e.call("GET", path+"/headers", e.admin, nil).want(200).json(); len(got["headers"].(map[string]any)) != 0 {
		t.Errorf("refused PATCHes stored headers: %v", got)
	}
}
