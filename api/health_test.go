package api_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// TestWebhookEndpointHealth: every endpoint answer carries its health; a
// failed delivery makes it failing, a 410 disables it with reason gone,
// PATCH enabled true clears that and PATCH enabled false records manual;
// /metrics counts endpoints by state.
func TestWebhookEndpointHealth(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		id := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		path := "/api/admin/webhook-endpoints/" + id
		health := func() map[string]any {
			t.Helper()
			return e.call("GET", path, e.admin, nil).want(200).json()["health"].(map[string]any)
		}
		at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		stamp := at.Format(time.RFC3339)

		if err := e.store.RecordDeliveryEnd(t.Context(), e.tenantID, id, false, at, 0); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"state": "failing", "consecutive_failures": float64(1), "last_success_at": nil, "last_failure_at": stamp,
			"disabled_at": nil, "disabled_reason": nil,
		}
		if diff := cmp.Diff(health(), want); diff != "" {
			t.Errorf("after a failed delivery (-got +want):\n%s", diff)
		}

		if err := e.store.DisableEndpoint(t.Context(), e.tenantID, id); err != nil {
			t.Fatal(err)
		}
		got := health()
		if got["state"] != "disabled" || got["disabled_reason"] != "gone" || got["disabled_at"] == nil {
			t.Errorf("after 410: %v, want disabled, gone, with disabled_at", got)
		}
		wantMetric(t, e, `recordhub_webhook_endpoints{state="disabled"} 1`)

		got = e.call("PATCH", path, e.admin, map[string]any{"enabled": true}).want(200).json()["health"].(map[string]any)
		want = map[string]any{
			"state": "healthy", "consecutive_failures": float64(0), "last_success_at": nil, "last_failure_at": stamp,
			"disabled_at": nil, "disabled_reason": nil,
		}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("after PATCH enabled true (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(health(), want); diff != "" {
			t.Errorf("GET after PATCH enabled true (-got +want):\n%s", diff)
		}
		wantMetric(t, e, `recordhub_webhook_endpoints{state="healthy"} 1`)

		got = e.call("PATCH", path, e.admin, map[string]any{"enabled": false}).want(200).json()["health"].(map[string]any)
		if got["state"] != "disabled" || got["disabled_reason"] != "manual" || got["disabled_at"] == nil {
			t.Errorf("after PATCH enabled false: %v, want disabled, manual, with disabled_at", got)
		}
		if diff := cmp.Diff(health(), got); diff != "" {
			t.Errorf("GET after PATCH enabled false (-get +patch):\n%s", diff)
		}
	})
}

// wantMetric checks that /metrics has line.
func wantMetric(t *testing.T, e *env, line string) {
	t.Helper()
	res, err := e.srv.Client().Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(body), line+"\n") {
		t.Errorf("/metrics lacks %q", line)
	}
}
