package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestThrottleNeedsRedisWhenSplit: in a split deployment without
// REDIS_URL, the API refuses to set a throttle (and still clears one), and
// a worker refuses to start while an endpoint has one, naming REDIS_URL.
func TestThrottleNeedsRedisWhenSplit(t *testing.T) {
	cfg := testConfig(t, models.Postgres)
	cfg.Role = RoleAPI
	cfg.TemporalAddress = fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens
	cfg.BootstrapAdminKey = "rh_throttle_split_" + strings.Repeat("k", 24)
	cfg.WebhookAllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	base, _ := startService(t, cfg, io.Discard)
	key := cfg.BootstrapAdminKey

	ep := map[string]any{"url": "http://127.0.0.1:1/hook", "events": []string{"record_created"}}
	ep["rate_limit"] = map[string]any{"per_second": 5}
	st, body := call(t, "POST", base+"/api/admin/webhook-endpoints", key, string(must(json.Marshal(ep))))
	if st != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body), "REDIS_URL") {
		t.Errorf("create with a throttle on --role api without Redis: %d %v, want 400 naming REDIS_URL", st, body)
	}
	ep["rate_limit"], ep["max_in_flight"] = nil, nil
	created := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, ep)

	// Set behind the API's back, as by an earlier deployment with Redis.
	store, err := openStore(context.Background(), cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tenantID := mustTenant(t, store, key)
	two := 2
	if _, err := store.UpdateEndpoint(context.Background(), tenantID, created["id"].(string),
		models.EndpointInput{MaxInFlight: models.OptionalInt{Set: true, Value: &two}}, nil); err != nil {
		t.Fatal(err)
	}
	worker := cfg
	worker.Role = RoleWorker
	err = run(t.Context(), worker, Env{Stdout: io.Discard, Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Errorf("worker without Redis while an endpoint is throttled: %v, want a refusal naming REDIS_URL", err)
	}
	// Clearing is always allowed.
	st, body = call(t, "PATCH", base+"/api/admin/webhook-endpoints/"+created["id"].(string), key, `{"max_in_flight": null}`)
	if st != http.StatusOK || body["max_in_flight"] != nil {
		t.Errorf("clearing max_in_flight: %d %v", st, body)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
