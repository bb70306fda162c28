package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestAPIRoleWithoutTemporal (readiness by role): an API replica
// starts, stays ready and accepts writes while Temporal is unreachable; the
// writes' events wait in the outbox; a replay answers 503, not a hang.
func TestAPIRoleWithoutTemporal(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, d)
			cfg.Role = RoleAPI
			cfg.TemporalAddress = fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens
			cfg.BootstrapAdminKey = "rh_api_role_" + strings.Repeat("k", 24)
			cfg.WebhookAllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			base, _ := startService(t, cfg, io.Discard)
			key := cfg.BootstrapAdminKey

			st, body := call(t, "GET", base+"/readyz", "", "")
			if st != http.StatusOK {
				t.Fatalf("readyz of --role api with Temporal down: %d %v", st, body)
			}
			if _, ok := body["checks"].(map[string]any)["temporal"]; ok {
				t.Errorf("--role api checks Temporal: %v", body)
			}
			mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "notes", "name": "Notes",
				"fields": []any{map[string]any{"name": "text", "type": "string"}}})
			jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": "http://127.0.0.1:1/hook", "events": []string{"record_created"}})
			rec := jsonCall(t, "POST", base+"/api/modules/"+mod["id"].(string)+"/records", key, map[string]any{"fields": map[string]any{"text": "kept"}})

			store, err := openStore(context.Background(), cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			pending, err := store.PendingEvents(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(pending) != 1 || pending[0].RecordID != rec["id"] {
				t.Errorf("outbox %+v, want the record's event", pending)
			}

			// A replay needs Temporal: 503 unavailable once the start gives up.
			tenantID := mustTenant(t, store, key)
			ev := pending[0]
			row := &models.WebhookDelivery{TenantID: tenantID, EventID: ev.ID, EventType: ev.Type, EndpointID: endpointOf(t, store, tenantID),
				WorkflowID: "w", RunID: "r", Attempt: 1, RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{}}
			if err := store.InsertAttempt(context.Background(), row); err != nil {
				t.Fatal(err)
			}
			if st, body := call(t, "POST", base+"/api/admin/webhook-deliveries/"+row.ID+"/replay", key, ""); st != http.StatusServiceUnavailable || body["error"] != "unavailable" {
				t.Errorf("replay with Temporal down: %d %v, want 503 unavailable", st, body)
			}
		})
	}
}

func endpointOf(t *testing.T, s *models.Store, tenantID string) string {
	t.Helper()
	eps, _, err := s.ListEndpoints(context.Background(), tenantID, models.Page{Page: 1, Limit: 1})
	if err != nil || len(eps) != 1 {
		t.Fatalf("endpoints %v %v", eps, err)
	}
	return eps[0].ID
}
