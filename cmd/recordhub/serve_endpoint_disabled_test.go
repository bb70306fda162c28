//go:build !noembedtemporal

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestEndpointDisabledEndToEnd: endpoint A's receiver answers 410, which
// disables A; endpoint B, subscribed to endpoint_disabled (on one module
// only, which does not narrow that event), receives the announcement once,
// signed; A never does. A record change while A is disabled leaves a
// skipped row for A in the deliveries list.
func TestEndpointDisabledEndToEnd(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			cfg := webhookConfig(t, d)
			base, _ := startService(t, cfg, io.Discard)
			key := cfg.BootstrapAdminKey

			var (
				mu       sync.Mutex
				goneSeen []string // X-Webhook-Event of each request A's receiver got
			)
			gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				goneSeen = append(goneSeen, r.Header.Get("X-Webhook-Event"))
				mu.Unlock()
				w.WriteHeader(http.StatusGone)
			}))
			t.Cleanup(gone.Close)
			watcher := newReceiver(t, 0)

			mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
				"fields": []any{map[string]any{"name": "title", "type": "string"}}})
			modID := mod["id"].(string)
			a := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{
				"url": gone.URL + "/hook", "events": []string{models.EventRecordCreated, models.EventEndpointDisabled}})
			aID := a["id"].(string)
			b := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{
				"url": watcher.srv.URL + "/hook", "events": []string{models.EventEndpointDisabled}, "module_ids": []string{modID}})
			watcher.mu.Lock()
			watcher.secret = b["secret"].(string)
			watcher.mu.Unlock()

			jsonCall(t, "POST", base+"/api/modules/"+modID+"/records", key, map[string]any{"fields": map[string]any{"title": "first"}})
			storetest.Eventually(t, 30*time.Second, "A disabled by its 410", func() bool {
				st, m := call(t, "GET", base+"/api/admin/webhook-endpoints/"+aID, key, "")
				h, _ := m["health"].(map[string]any)
				return st == 200 && h["state"] == "disabled" && h["disabled_reason"] == "gone"
			})
			storetest.Eventually(t, 30*time.Second, "B's endpoint_disabled delivery", func() bool { return len(watcher.received()) > 0 })
			got := watcher.received()[0]
			endpoint, _ := got.body["endpoint"].(map[string]any)
			if !got.verified || got.event != models.EventEndpointDisabled || got.attempt != "1" || got.body["event"] != models.EventEndpointDisabled ||
				got.body["reason"] != models.DisabledGone || endpoint["id"] != aID || endpoint["url"] != gone.URL+"/hook" || got.body["id"] != got.id {
				t.Errorf("B received %+v, want a signed endpoint_disabled about %s for reason gone", got, aID)
			}
			// B's delivery was started, so A's fate for the event was settled
			// in the same dispatch: no delivery, not even a skipped row.
			st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?event_id="+got.id+"&limit=100", key, "")
			if st != 200 {
				t.Fatalf("list deliveries: %d %v", st, m)
			}
			for _, row := range m["data"].([]any) {
				if r := row.(map[string]any); r["endpoint_id"] != b["id"] {
					t.Errorf("a delivery of A's endpoint_disabled event to another endpoint than B: %v", r)
				}
			}

			// A record change while A is disabled: skipped for A, and visible.
			second := jsonCall(t, "POST", base+"/api/modules/"+modID+"/records", key, map[string]any{"fields": map[string]any{"title": "second"}})
			var skipped map[string]any
			storetest.Eventually(t, 30*time.Second, "A's skipped row", func() bool {
				st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?endpoint_id="+aID+"&error=endpoint_disabled", key, "")
				if st != 200 || m["total"].(float64) != 1 {
					return false
				}
				skipped = m["data"].([]any)[0].(map[string]any)
				return true
			})
			if skipped["attempt"] != float64(0) || skipped["event_type"] != models.EventRecordCreated || skipped["workflow_id"] != "" ||
				skipped["succeeded"] != false || skipped["finished_at"] == nil || skipped["request_url"] != gone.URL+"/hook" {
				t.Errorf("skipped row %v", skipped)
			}
			st, full := call(t, "GET", base+"/api/admin/webhook-deliveries/"+skipped["id"].(string), key, "")
			if headers, _ := full["request_headers"].(map[string]any); st != 200 || full["request_body"] != "" || len(headers) != 0 {
				t.Errorf("skipped row in full: %d %v", st, full)
			}

			if n := len(watcher.received()); n != 1 {
				t.Errorf("B received %d requests, want exactly 1: %+v", n, watcher.received())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(goneSeen) != 1 || goneSeen[0] != models.EventRecordCreated {
				t.Errorf("A's receiver got %v, want the first record_created only (record %v)", goneSeen, second["id"])
			}
		})
	}
}
