//go:build !noembedtemporal

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// traceReceiver keeps the traceparent header of every delivery, by the
// id of the record it is about.
type traceReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string]delivered
}

func newTraceReceiver(t *testing.T) *traceReceiver {
	r := &traceReceiver{got: map[string]delivered{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			TenantID string `json:"tenant_id"`
			Record   struct {
				ID string `json:"id"`
			} `json:"record"`
		}
		raw, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(raw, &body)
		r.mu.Lock()
		r.got[body.Record.ID] = delivered{req.Header.Get("X-Webhook-Id"), body.TenantID, req.Header.Get("traceparent")}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *traceReceiver) of(recordID string) (delivered, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.got[recordID]
	return d, ok
}

// traceID reads the trace id of a traceparent header.
func traceID(traceparent string) trace.TraceID {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx).TraceID()
}

// TestTracesEndToEnd: with tracing on, a record created through the API
// is delivered by the dispatcher through a Temporal workflow, and the
// receiver gets a traceparent of the API request's trace, which holds the
// request's, the workflow's, the activity's and the outbound request's
// spans; an inbound webhook call starts a trace that its record's delivery
// continues, and no span shows the inbound token. With tracing off no
// traceparent is sent and events store none.
func TestTracesEndToEnd(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			for _, on := range []bool{true, false} {
				name := "off"
				if on {
					name = "on"
				}
				t.Run(name, func(t *testing.T) { testTraces(t, d, on) })
			}
		})
	}
}

func testTraces(t *testing.T, d models.Dialect, on bool) {
	cfg := webhookConfig(t, d)
	rec := tracetest.NewSpanRecorder()
	env := Env{Stdout: io.Discard, Stderr: io.Discard}
	if on {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		t.Cleanup(func() { tp.Shutdown(context.Background()) })
		env.TracerProvider = tp
	}
	base, stop := startServiceEnv(t, cfg, env)
	key := cfg.BootstrapAdminKey
	rcv := newTraceReceiver(t)

	orders := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
		"fields": []any{map[string]any{"name": "title", "type": "string"}}})
	mirror := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "mirror", "name": "Mirror",
		"fields": []any{map[string]any{"name": "source_id", "type": "string", "required": true}}})
	jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": rcv.srv.URL + "/hook", "events": []string{"record_created"}})
	hook := jsonCall(t, "PUT", base+"/api/admin/modules/"+mirror["id"].(string)+"/inbound-webhook", key, map[string]any{
		"mapping":      []any{map[string]any{"source": "$.payload.id", "field": "source_id"}},
		"match_fields": []string{"source_id"},
	})
	token := hook["token"].(string)

	created := jsonCall(t, "POST", base+"/api/modules/"+orders["id"].(string)+"/records", key, map[string]any{"fields": map[string]any{"title": "traced"}})
	res, err := http.Post(hook["url"].(string), "application/json", bytes.NewReader([]byte(`{"id":"ext-1"}`)))
	if err != nil {
		t.Fatal(err)
	}
	inbound := map[string]any{}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if err := json.Unmarshal(raw, &inbound); err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("inbound call: %d %s", res.StatusCode, raw)
	}

	var fromAPI, fromInbound delivered
	storetest.Eventually(t, 30*time.Second, "both deliveries", func() bool {
		var ok1, ok2 bool
		fromAPI, ok1 = rcv.of(created["id"].(string))
		fromInbound, ok2 = rcv.of(inbound["recordId"].(string))
		return ok1 && ok2
	})

	if !on {
		if fromAPI.traceparent != "" || fromInbound.traceparent != "" {
			t.Errorf("tracing off, traceparent sent: %q, %q", fromAPI.traceparent, fromInbound.traceparent)
		}
		if n := len(rec.Ended()); n != 0 {
			t.Errorf("tracing off, %d spans recorded", n)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		store, err := openStore(context.Background(), cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		for _, dl := range []delivered{fromAPI, fromInbound} {
			ev, err := store.GetEvent(context.Background(), dl.tenantID, dl.eventID)
			if err != nil {
				t.Fatal(err)
			}
			if ev.TraceParent != "" {
				t.Errorf("tracing off, event %s stored traceparent %q", ev.ID, ev.TraceParent)
			}
		}
		return
	}

	// The workflow's span ends after its activity's: once it has, the
	// trace is complete.
	spansOf := func(id trace.TraceID) map[string]sdktrace.ReadOnlySpan {
		out := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() == id {
				out[s.Name()] = s
			}
		}
		return out
	}
	want := []string{"StartWorkflow:" + workflows.DeliveryWorkflowName, "RunWorkflow:" + workflows.DeliveryWorkflowName,
		"StartActivity:" + workflows.AttemptActivityName, "RunActivity:" + workflows.AttemptActivityName, "POST webhook"}
	for _, c := range []struct {
		what, root string
		dl         delivered
	}{
		{"API record create", "POST /api/modules/:id/records", fromAPI},
		{"inbound call", "POST " + "/api/webhooks/:moduleSlug/:token", fromInbound},
	} {
		id := traceID(c.dl.traceparent)
		if !id.IsValid() {
			t.Errorf("%s: receiver got traceparent %q", c.what, c.dl.traceparent)
			continue
		}
		storetest.Eventually(t, 30*time.Second, c.what+"'s workflow span", func() bool { _, ok := spansOf(id)["RunWorkflow:"+workflows.DeliveryWorkflowName]; return ok })
		spans := spansOf(id)
		root, ok := spans[c.root]
		if !ok {
			names := []string{}
			for n := range spans {
				names = append(names, n)
			}
			t.Errorf("%s: trace %s has no span %q, only %v", c.what, id, c.root, names)
			continue
		}
		if root.Parent().IsValid() {
			t.Errorf("%s: the request span has a parent %v, want it to start the trace", c.what, root.Parent())
		}
		for _, n := range want {
			if _, ok := spans[n]; !ok {
				t.Errorf("%s: trace %s lacks span %q", c.what, id, n)
			}
		}
		if out, ok := spans["POST webhook"]; ok {
			if got := out.SpanContext().SpanID().String(); !strings.Contains(c.dl.traceparent, got) {
				t.Errorf("%s: traceparent %q does not name the outbound span %s", c.what, c.dl.traceparent, got)
			}
			if out.SpanKind() != trace.SpanKindClient {
				t.Errorf("%s: outbound span kind %v", c.what, out.SpanKind())
			}
		}
	}
	// No span says the inbound token, by name or attribute.
	for _, s := range rec.Ended() {
		if strings.Contains(s.Name(), token) {
			t.Errorf("span name %q holds the inbound token", s.Name())
		}
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.String(), token) {
				t.Errorf("span %q attribute %s holds the inbound token", s.Name(), a.Key)
			}
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
