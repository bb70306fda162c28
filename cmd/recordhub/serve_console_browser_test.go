//go:build !noembedtemporal

package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
)

// consoleBrowserDir holds the console's browser test and its playwright-core.
const consoleBrowserDir = "../../api/console/browsertest"

// TestConsoleInBrowser runs the support console in headless Chromium
// against the real service (api/console/browsertest/console.test.mjs): sign
// in, an endpoint turning failing, an attempt in full and its replay, a
// recovery, markup shown as text, inbound calls (Replay only where the API
// replays), a record's deliveries, the secret on demand, endpoints 20 to a
// page, the time a 50-row deliveries page takes, module names, endpoint
// URLs, an endpoint's content filter edited, times with their zone and
// prose wrapped between words. Without Chromium, node or playwright-core
// (npm ci in that folder) it is skipped, unless
// RECORDHUB_TEST_REQUIRE_BROWSER=1. RECORDHUB_CONSOLE_SCREENSHOT names a
// PNG of the endpoints page to write.
func TestConsoleInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium, Node and the embedded Temporal server; skipped by -short")
	}
	browser := cmp.Or(os.Getenv("CHROMIUM"), "/usr/bin/chromium")
	node, nodeErr := exec.LookPath("node")
	_, browserErr := os.Stat(browser)
	_, pwErr := os.Stat(filepath.Join(consoleBrowserDir, "node_modules", "playwright-core", "package.json"))
	for _, missing := range []struct {
		err  error
		what string
	}{
		{browserErr, "Chromium at " + browser + " (set CHROMIUM)"},
		{nodeErr, "node"},
		{pwErr, "playwright-core (run npm ci in api/console/browsertest)"},
	} {
		if missing.err == nil {
			continue
		}
		if os.Getenv("RECORDHUB_TEST_REQUIRE_BROWSER") == "1" {
			t.Fatalf("the console browser test needs %s: %v", missing.what, missing.err)
		}
		t.Skipf("skipping the console browser test: no %s (%v)", missing.what, missing.err)
	}

	cfg := webhookConfig(t, models.SQLite)
	// Only the links' shape is checked; nothing follows them.
	cfg.TemporalUIURL = "http://temporal-ui.test:8233"
	base, _ := startService(t, cfg, io.Discard)
	key := cfg.BootstrapAdminKey
	rcv := newSwitchReceiver(t)

	notes := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "notes", "name": "Notes",
		"fields": []any{map[string]any{"name": "title", "type": "string"}}})
	leads := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "leads", "name": "Leads",
		"fields": []any{map[string]any{"name": "email", "type": "string", "required": true}, map[string]any{"name": "name", "type": "string"}}})
	// One attempt in all, so that a single failure finishes a delivery.
	ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{
		"url": rcv.URL + "/hook", "description": "console test receiver", "retry_max": 1,
		"events": []string{models.EventRecordCreated, models.EventRecordUpdated, models.EventRecordDeleted}, "module_ids": []string{notes["id"].(string)}})
	const inboundSecret = "console-inbound-secret-0123456789"
	hook := jsonCall(t, "PUT", base+"/api/admin/modules/"+leads["id"].(string)+"/inbound-webhook", key, map[string]any{
		"secret":       inboundSecret,
		"mapping":      []any{map[string]any{"source": "$.payload.email", "field": "email"}, map[string]any{"source": "$.payload.name", "field": "name"}},
		"match_fields": []string{"email"},
	})
	// A call with a wrong signature (401, which cannot be replayed), then a
	// good one (202), the newest.
	body := `{"email":"ada@example.com","name":"Ada"}`
	for _, call := range []struct {
		secret string
		want   int
	}{{"not-the-secret", http.StatusUnauthorized}, {inboundSecret, http.StatusAccepted}} {
		mac := hmac.New(sha256.New, []byte(call.secret))
		mac.Write([]byte(body))
		req, err := http.NewRequest("POST", hook["url"].(string), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Webhook-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != call.want {
			t.Fatalf("inbound call signed with %q: %d, want %d", call.secret, res.StatusCode, call.want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "console.test.mjs")
	cmd.Dir = consoleBrowserDir
	cmd.Env = append(os.Environ(),
		"CHROMIUM="+browser,
		"RECORDHUB_URL="+base,
		"RECORDHUB_ADMIN_KEY="+key,
		"RECEIVER_CONTROL_URL="+rcv.URL+"/control",
		"RECORDHUB_ENDPOINT_ID="+ep["id"].(string),
		"RECORDHUB_MODULE_ID="+notes["id"].(string),
		"RECORDHUB_INBOUND_MODULE_ID="+leads["id"].(string),
		"RECORDHUB_TEMPORAL_UI="+cfg.TemporalUIURL,
		"RECORDHUB_TEMPORAL_NAMESPACE="+cfg.TemporalNamespace,
		"SCREENSHOT="+os.Getenv("RECORDHUB_CONSOLE_SCREENSHOT"),
	)
	out := &lineLogger{t: t}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	out.flush()
	if ctx.Err() != nil {
		t.Fatalf("the console browser test did not finish within 2 minutes")
	}
	if err != nil {
		t.Fatalf("the console browser test failed: %v", err)
	}
}

// newSwitchReceiver is a webhook receiver at /hook that answers 500 until
// POST /control?mode=succeed, then 204 (mode=fail switches back).
func newSwitchReceiver(t *testing.T) *httptest.Server {
	t.Helper()
	var (
		mu      sync.Mutex
		succeed bool
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control", func(w http.ResponseWriter, r *http.Request) {
		mode := r.URL.Query().Get("mode")
		if mode != "fail" && mode != "succeed" {
			http.Error(w, "mode must be fail or succeed", http.StatusBadRequest)
			return
		}
		mu.Lock()
		succeed = mode == "succeed"
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := succeed
		mu.Unlock()
		if ok {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":"failing on purpose"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// lineLogger writes a child process's output to the test log, a line at a
// time, as it comes.
type lineLogger struct {
	t   *testing.T
	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.t.Log(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.t.Log(string(l.buf))
		l.buf = nil
	}
}
