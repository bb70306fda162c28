//go:build !noembedtemporal

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// headerReceiver keeps the headers of every request it gets, and fails
// the first attempt of each event.
type headerReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []http.Header
	// seen counts requests per X-Webhook-Id.
	seen map[string]int
}

func newHeaderReceiver(t *testing.T) *headerReceiver {
	r := &headerReceiver{seen: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.got = append(r.got, req.Header.Clone())
		id := req.Header.Get("X-Webhook-Id")
		r.seen[id]++
		first := r.seen[id] == 1
		r.mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *headerReceiver) requests() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.got...)
}

// TestCustomHeadersEndToEnd: through the whole service, an endpoint's
// custom headers arrive on the first attempt, on its retry and on a
// replay, beside recordhub's own; and their values appear nowhere else:
// not in endpoint answers, delivery rows, access logs, the service's log
// (at debug level) or any span, nor in clear in the database.
func TestCustomHeadersEndToEnd(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			const token, apiKey = "Bearer e2e-gw-4b9d0a", "e2e-key-c81f"
			leaks := func(s string) bool { return strings.Contains(s, "e2e-gw-4b9d0a") || strings.Contains(s, apiKey) }

			cfg := webhookConfig(t, d)
			cfg.LogLevel = slog.LevelDebug
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			t.Cleanup(func() { tp.Shutdown(context.Background()) })
			var stdout, stderr syncBuffer
			base, stop := startServiceEnv(t, cfg, Env{Stdout: &stdout, Stderr: &stderr, TracerProvider: tp})
			key := cfg.BootstrapAdminKey
			rcv := newHeaderReceiver(t)

			mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
				"fields": []any{map[string]any{"name": "title", "type": "string"}}})
			ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{
				"url": rcv.srv.URL + "/hook", "events": []string{"record_created"},
				"headers": map[string]string{"Authorization": token, "x-api-key": apiKey},
			})
			epID := ep["id"].(string)
			if h, _ := ep["headers"].(map[string]any); h["Authorization"] != models.HeaderMask || h["X-Api-Key"] != models.HeaderMask {
				t.Errorf("create answered headers %v, want them masked", ep["headers"])
			}
			// Refused: a header that would replace a signature.
			if st, m := call(t, "PATCH", base+"/api/admin/webhook-endpoints/"+epID, key, `{"headers":{"X-Webhook-Signature":"sha256=00"}}`); st != 422 || m["error"] != "validation_failed" {
				t.Errorf("a signature header as a custom header: %d %v, want 422 validation_failed", st, m)
			}

			jsonCall(t, "POST", base+"/api/modules/"+mod["id"].(string)+"/records", key, map[string]any{"fields": map[string]any{"title": "a"}})
			// The first attempt fails (503), its retry succeeds.
			storetest.Eventually(t, 30*time.Second, "the first attempt and its retry", func() bool { return len(rcv.requests()) >= 2 })
			var deliveryID string
			storetest.Eventually(t, 30*time.Second, "the successful attempt's row", func() bool {
				st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?succeeded=true&endpoint_id="+epID, key, "")
				if st != 200 || m["total"].(float64) != 1 {
					return false
				}
				deliveryID = m["data"].([]any)[0].(map[string]any)["id"].(string)
				return true
			})
			st, rep := call(t, "POST", base+"/api/admin/webhook-deliveries/"+deliveryID+"/replay", key, "")
			if st != 202 {
				t.Fatalf("replay: %d %v", st, rep)
			}
			// The replay, with the same X-Webhook-Id, succeeds at once: the third request.
			storetest.Eventually(t, 30*time.Second, "the replay", func() bool { return len(rcv.requests()) >= 3 })

			for i, h := range rcv.requests() {
				if h.Get("Authorization") != token || h.Get("X-Api-Key") != apiKey {
					t.Errorf("request %d: Authorization %q, X-Api-Key %q; want the endpoint's", i+1, h.Get("Authorization"), h.Get("X-Api-Key"))
				}
				if !strings.HasPrefix(h.Get("X-Webhook-Signature"), "sha256=") || !strings.HasPrefix(h.Get("Webhook-Signature"), "v1,") || h.Get("Traceparent") == "" {
					t.Errorf("request %d: recordhub's own headers missing: %v", i+1, h)
				}
			}

			// Every row of the endpoint, full: custom values masked.
			st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?endpoint_id="+epID+"&limit=100", key, "")
			if st != 200 || m["total"].(float64) < 3 {
				t.Fatalf("deliveries: %d %v", st, m)
			}
			for _, row := range m["data"].([]any) {
				id := row.(map[string]any)["id"].(string)
				body, status := getRaw(t, base+"/api/admin/webhook-deliveries/"+id, key)
				if status != 200 || leaks(body) {
					t.Errorf("delivery %s: %d, leaks a custom value: %v", id, status, leaks(body))
				}
				var full struct {
					RequestHeaders map[string][]string `json:"request_headers"`
				}
				json.Unmarshal([]byte(body), &full)
				h := full.RequestHeaders
				if a := h["Authorization"]; len(a) != 1 || a[0] != models.HeaderMask {
					t.Errorf("delivery %s: request_headers Authorization %v, want it masked", id, h["Authorization"])
				}
			}
			for _, p := range []string{"/api/admin/webhook-endpoints/" + epID, "/api/admin/webhook-endpoints?include=stats", "/api/admin/access-logs?limit=100"} {
				if body, status := getRaw(t, base+p, key); status != 200 || leaks(body) {
					t.Errorf("GET %s: %d, leaks a custom value: %v", p, status, leaks(body))
				}
			}
			_, revealed := call(t, "GET", base+"/api/admin/webhook-endpoints/"+epID+"/headers", key, "")
			if h, _ := revealed["headers"].(map[string]any); h["Authorization"] != token || h["X-Api-Key"] != apiKey {
				t.Errorf("reveal: %v", revealed)
			}

			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if leaks(stdout.String()) || leaks(stderr.String()) {
				t.Errorf("the service's output holds a custom header value")
			}
			if !strings.Contains(stderr.String(), "webhook attempt failed") {
				t.Errorf("no log line of the failed attempts: the log checked is not the service's")
			}
			if len(spans.Ended()) == 0 {
				t.Error("no spans recorded")
			}
			for _, s := range spans.Ended() {
				if leaks(s.Name()) {
					t.Errorf("span name %q holds a custom header value", s.Name())
				}
				for _, a := range s.Attributes() {
					if leaks(a.Value.String()) {
						t.Errorf("span %q attribute %s holds a custom header value", s.Name(), a.Key)
					}
				}
			}

			db := storetest.DB{Dialect: d, DSN: cfg.DatabaseURL}
			if d != models.Postgres {
				db.DSN = filepath.Join(cfg.DataDir, "recordhub.db")
			}
			var sealed string
			if err := db.SQL(t).QueryRowContext(context.Background(), db.Rebind("SELECT headers FROM webhook_endpoints WHERE id = ?"), epID).Scan(&sealed); err != nil {
				t.Fatal(err)
			}
			if sealed == "" || leaks(sealed) {
				t.Errorf("headers column %q: want it sealed", sealed)
			}
			var leakedRows int
			if err := db.SQL(t).QueryRowContext(context.Background(), db.Rebind("SELECT COUNT(*) FROM webhook_deliveries WHERE request_headers LIKE ? OR request_headers LIKE ?"), "%e2e-gw-4b9d0a%", "%"+apiKey+"%").Scan(&leakedRows); err != nil {
				t.Fatal(err)
			}
			if leakedRows != 0 {
				t.Errorf("%d delivery rows store a custom header value", leakedRows)
			}
		})
	}
}

// getRaw answers a GET with key as bearer: its body as sent, and status.
func getRaw(t *testing.T, url, key string) (string, int) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b), res.StatusCode
}
