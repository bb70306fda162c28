//go:build !noembedtemporal

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// failingReceiver answers 500 to everything and keeps what it was sent.
type failingReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []failedRequest
}

type failedRequest struct {
	eventID, event, attempt, userAgent string
	body                               []byte
}

func newFailingReceiver(t *testing.T) *failingReceiver {
	t.Helper()
	r := &failingReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, failedRequest{
			eventID: req.Header.Get("X-Webhook-Id"), event: req.Header.Get("X-Webhook-Event"),
			attempt: req.Header.Get("X-Webhook-Attempt"), userAgent: req.Header.Get("User-Agent"), body: body,
		})
		r.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *failingReceiver) requests() []failedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// refusedURL is a loopback URL where nothing listens.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/hook"
}

// attemptKey names one attempt of one delivery.
type attemptKey struct {
	eventID, endpointID string
	attempt             int
}

// TestFailedAttemptsLog: receivers that answer 500 or refuse connections
// are the receivers' business, not the operator's. Every failed attempt
// leaves exactly one WARN line of recordhub's own, naming the event, its
// type, the endpoint, the attempt and the error, and the whole log of the
// service (its Temporal SDK and embedded server included) has no line at
// ERROR level, from the start to the end of a graceful stop. The bodies
// the receiver got carry the keys documented for their event type.
func TestFailedAttemptsLog(t *testing.T) {
	cfg := webhookConfig(t, models.SQLite)
	var logs syncBuffer
	base, stop := startServiceLogging(t, cfg, io.Discard, &logs)
	key := cfg.BootstrapAdminKey

	mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
		"fields": []any{map[string]any{"name": "title", "type": "string"}, map[string]any{"name": "stage", "type": "status", "states": []string{"new", "done"}, "initial": "new"}}})
	modID := mod["id"].(string)
	failing := newFailingReceiver(t)
	const retryMax = 2
	endpoints := map[string]struct {
		code   string
		status float64 // 0: no response
	}{}
	for _, c := range []struct {
		url, code string
		status    float64
	}{
		{failing.srv.URL + "/hook", models.DeliveryErrHTTPStatus, 500},
		{refusedURL(t), models.DeliveryErrConnectionRefused, 0},
	} {
		ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": c.url, "events": models.EventTypes, "retry_max": retryMax})
		endpoints[ep["id"].(string)] = struct {
			code   string
			status float64
		}{c.code, c.status}
	}

	// Every record event type: created; updated, status_change and
	// custom_data_updated from one PATCH; deleted.
	rec := jsonCall(t, "POST", base+"/api/modules/"+modID+"/records", key, map[string]any{"fields": map[string]any{"title": "a"}})
	recURL := base + "/api/modules/" + modID + "/records/" + rec["id"].(string)
	jsonCall(t, "PATCH", recURL, key, map[string]any{"fields": map[string]any{"title": "b", "stage": "done"}, "custom_data": map[string]any{"k": "v"}})
	if st, m := call(t, "DELETE", recURL, key, ""); st != 200 {
		t.Fatalf("DELETE: %d %v", st, m)
	}
	const events = 5
	storetest.WhileProgressing(t, time.Minute, "every attempt at the 500 receiver", func() (int, bool) {
		n := len(failing.requests())
		return n, n >= events*retryMax
	})
	sent := failing.requests()
	eventTypes := map[string]string{} // event id → type, as the receiver saw them
	for _, r := range sent {
		eventTypes[r.eventID] = r.event
	}
	// Each delivery's workflow ends failed, as before its attempts' errors
	// became benign; the service stops once they all have.
	c, err := client.Dial(client.Options{
		HostPort: fmt.Sprintf("127.0.0.1:%d", cfg.TemporalPort), Namespace: cfg.TemporalNamespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatal(err)
	}
	for evID := range eventTypes {
		for epID := range endpoints {
			id := workflows.WorkflowID(evID, epID)
			var status enumspb.WorkflowExecutionStatus
			storetest.Eventually(t, 30*time.Second, id+" to end", func() bool {
				d, err := c.DescribeWorkflowExecution(t.Context(), id, "")
				if err != nil {
					t.Fatalf("describe %s: %v", id, err)
				}
				status = d.GetWorkflowExecutionInfo().GetStatus()
				return status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			})
			if status != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
				t.Errorf("%s ended %s, want failed", id, status)
			}
		}
	}
	c.Close()
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}

	for _, r := range sent {
		if wantUA := "recordhub-webhooks/" + appVersion(); r.userAgent != wantUA || r.userAgent == "recordhub-webhooks/dev" {
			t.Errorf("User-Agent %q, want %q", r.userAgent, wantUA)
		}
		if got, want := bodyKeys(t, r.body), documentedKeys(r.event); !slices.Equal(got, want) {
			t.Errorf("%s body keys %v, want %v: %s", r.event, got, want, r.body)
		}
	}
	if len(eventTypes) != events || len(sent) != events*retryMax {
		t.Fatalf("the 500 receiver got %d requests for %d events, want %d for %d", len(sent), len(eventTypes), events*retryMax, events)
	}

	// Exactly one line per attempt, with what an operator needs.
	lines := logLines(t, logs.String())
	seen := map[attemptKey]int{}
	for _, l := range lines {
		if l["msg"] != "webhook attempt failed" {
			continue
		}
		epID, _ := l["endpoint_id"].(string)
		evID, _ := l["event_id"].(string)
		attempt, _ := l["attempt"].(float64)
		k := attemptKey{evID, epID, int(attempt)}
		seen[k]++
		ep, ok := endpoints[epID]
		if !ok || eventTypes[evID] == "" || attempt < 1 || attempt > retryMax {
			t.Errorf("a line for an attempt that was not made: %v", l)
			continue
		}
		got := map[string]any{"level": l["level"], "event_type": l["event_type"], "error": l["error"], "status": l["status"], "last_attempt": l["last_attempt"]}
		wantLine := map[string]any{"level": "WARN", "event_type": eventTypes[evID], "error": ep.code, "status": nil, "last_attempt": nil}
		if ep.status != 0 {
			wantLine["status"] = ep.status
		}
		if int(attempt) == retryMax {
			wantLine["last_attempt"] = true
		}
		if diff := cmp.Diff(got, wantLine); diff != "" {
			t.Errorf("line %v (-got +want):\n%s", l, diff)
		}
		for _, k := range []string{"message", "delivery_id", "workflow_id", "tenant_id"} {
			if s, _ := l[k].(string); s == "" {
				t.Errorf("line %v: no %s", l, k)
			}
		}
	}
	for evID := range eventTypes {
		for epID := range endpoints {
			for n := 1; n <= retryMax; n++ {
				if c := seen[attemptKey{evID, epID, n}]; c != 1 {
					t.Errorf("event %s, endpoint %s, attempt %d: %d lines, want 1", evID, epID, n, c)
				}
			}
		}
	}

	var errorLines []string
	for _, l := range lines {
		if l["level"] == "ERROR" {
			b, _ := json.Marshal(l)
			errorLines = append(errorLines, string(b))
		}
	}
	if len(errorLines) > 0 {
		t.Errorf("%d ERROR lines, want none:\n%s", len(errorLines), strings.Join(errorLines, "\n"))
	}
}

// bodyKeys returns the top-level keys of a JSON object, sorted.
func bodyKeys(t *testing.T, body []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// documentedKeys are the top-level keys the README and openapi give a
// record event's body, sorted: status on status_change only.
func documentedKeys(event string) []string {
	keys := []string{"changes", "event", "id", "module", "occurred_at", "record", "tenant_id"}
	if event == models.EventStatusChange {
		keys = append(keys, "status")
	}
	slices.Sort(keys)
	return keys
}
