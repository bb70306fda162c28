//go:build !noembedtemporal

package main

import (
	"context"
	"io"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestListenEndToEnd is the README walkthrough's end: the real service,
// with loopback receivers allowed as the README says, delivers a record
// change to the real `webhooks listen`, which verifies both signatures
// with the secret exactly as the endpoint's creation answered it.
func TestListenEndToEnd(t *testing.T) {
	cfg := webhookConfig(t, models.SQLite)
	cfg.WebhookAllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	base, stop := startService(t, cfg, io.Discard)
	key := cfg.BootstrapAdminKey

	mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
		"fields": []any{map[string]any{"name": "title", "type": "string"}}})
	modID := mod["id"].(string)
	// Subscribed before listen starts, as in the README: the secret comes
	// from this answer. The URL is pointed at listen once it is up.
	ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": "http://127.0.0.1:1/webhooks", "events": []string{"record_updated"}})
	secret := ep["secret"].(string)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- webhooksCommand(ctx, []string{"listen", "--port", "0", "--secret", secret}, func(string) (string, bool) { return "", false }, &out, &errOut)
	}()
	subscribe := regexp.MustCompile(`Subscribe this URL: (http://127\.0\.0\.1:\d+/\S*)\n`)
	var url string
	storetest.Eventually(t, 10*time.Second, "listen's URL", func() bool {
		if m := subscribe.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	jsonCall(t, "PATCH", base+"/api/admin/webhook-endpoints/"+ep["id"].(string), key, map[string]any{"url": url})

	rec := jsonCall(t, "POST", base+"/api/modules/"+modID+"/records", key, map[string]any{"fields": map[string]any{"title": "draft"}})
	recID := rec["id"].(string)
	jsonCall(t, "PATCH", base+"/api/modules/"+modID+"/records/"+recID, key, map[string]any{"fields": map[string]any{"title": "final"}})

	var delivery string
	storetest.Eventually(t, 30*time.Second, "the record_updated delivery in listen's output", func() bool {
		for block := range strings.SplitSeq(out.String(), "\n--- ") {
			if strings.Contains(block, "event:               record_updated\n") {
				delivery = block
			}
		}
		return delivery != ""
	})
	eventID := regexp.MustCompile(`event id:            (evt_\S+)\n`).FindStringSubmatch(delivery)
	if eventID == nil {
		t.Fatalf("no event id in the delivery:\n%s", delivery)
	}
	for _, want := range []string{
		"webhook-id:          " + eventID[1] + "\n",
		"attempt:             1\n",
		"X-Webhook-Signature: ok\n",
		"webhook-signature:   ok\n",
		`  "id": "` + eventID[1] + `",`,
		`    "id": "` + recID + `",`,
		`"title": "final"`,
		"answered 204\n",
	} {
		if !strings.Contains(delivery, want) {
			t.Errorf("the delivery does not show %q:\n%s", want, delivery)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("listen after Ctrl-C: %v, want nil", err)
	}
	if errOut.String() != "" {
		t.Errorf("listen's stderr: %q", errOut.String())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
