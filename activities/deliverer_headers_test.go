package activities

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestAttemptSendsCustomHeaders: an endpoint's custom headers reach the
// receiver on every attempt beside recordhub's own, whose signatures still
// verify; the attempts' rows show them masked, and neither the log lines
// nor the spans of the attempts hold their values.
func TestAttemptSendsCustomHeaders(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			calls := 0
			recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				calls++
				if calls == 1 {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			})
			f := newFixture(t, storetest.Open(t, dialect), recv.URL+"/hook")
			const token, apiKey = "Bearer gw-7f3a91c2", "ak-0d44e1"
			custom := map[string]string{"authorization": token, "X-Api-Key": apiKey}
			if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{Headers: &custom}, nil); err != nil {
				t.Fatal(err)
			}
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			t.Cleanup(func() { tp.Shutdown(t.Context()) })
			var logs syncBuffer
			d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, TracerProvider: tp, Logger: jsonLogger(&logs)})

			if _, err := d.Attempt(t.Context(), f.input()); err == nil {
				t.Fatal("the first attempt succeeded against a 503")
			}
			if _, err := d.Attempt(t.Context(), f.input()); err != nil {
				t.Fatalf("second attempt: %v", err)
			}

			reqs := recv.requests()
			if len(reqs) != 2 {
				t.Fatalf("receiver got %d requests, want 2", len(reqs))
			}
			for i, got := range reqs {
				if a, k := got.header.Get("Authorization"), got.header.Get("X-Api-Key"); a != token || k != apiKey {
					t.Errorf("request %d: Authorization %q, X-Api-Key %q; want the endpoint's", i+1, a, k)
				}
				if !verifyHex(got.header.Get("X-Webhook-Signature"), got.body, f.secret) || !verifyStandard(got.header, got.body, f.secret) {
					t.Errorf("request %d: signatures do not verify", i+1)
				}
				if got.header.Get("User-Agent") != "recordhub-webhooks/1.2.3" || got.header.Get("Content-Type") != "application/json" {
					t.Errorf("request %d: User-Agent %q, Content-Type %q", i+1, got.header.Get("User-Agent"), got.header.Get("Content-Type"))
				}
				if got.header.Get("Traceparent") == "" {
					t.Errorf("request %d: no traceparent", i+1)
				}
			}

			rows := f.rows(t)
			if len(rows) != 2 {
				t.Fatalf("%d rows, want 2", len(rows))
			}
			for _, row := range rows {
				h := row.RequestHeaders
				if strings.Join(h["Authorization"], ",") != models.HeaderMask || strings.Join(h["X-Api-Key"], ",") != models.HeaderMask {
					t.Errorf("attempt %d row: Authorization %q, X-Api-Key %q; want them masked", row.Attempt, h["Authorization"], h["X-Api-Key"])
				}
				// recordhub's own headers are stored as sent.
				if len(h["X-Webhook-Signature"]) != 1 || !strings.HasPrefix(h["X-Webhook-Signature"][0], "sha256=") || len(h["Traceparent"]) != 1 || h["Traceparent"][0] == models.HeaderMask {
					t.Errorf("attempt %d row: own headers not stored as sent: %v", row.Attempt, h)
				}
				for name, vs := range h {
					for _, v := range vs {
						if strings.Contains(v, "gw-7f3a91c2") || strings.Contains(v, apiKey) {
							t.Errorf("attempt %d row: header %s holds a custom value", row.Attempt, name)
						}
					}
				}
			}

			if !strings.Contains(logs.String(), "webhook attempt failed") {
				t.Errorf("no WARN line for the failed attempt: %s", logs.String())
			}
			if strings.Contains(logs.String(), "gw-7f3a91c2") || strings.Contains(logs.String(), apiKey) {
				t.Errorf("the log holds a custom header value: %s", logs.String())
			}
			ended := spans.Ended()
			if len(ended) != 2 {
				t.Errorf("%d spans, want one per attempt", len(ended))
			}
			for _, s := range ended {
				for _, a := range s.Attributes() {
					if v := a.Value.String(); strings.Contains(v, "gw-7f3a91c2") || strings.Contains(v, apiKey) {
						t.Errorf("span %q attribute %s holds a custom header value", s.Name(), a.Key)
					}
				}
			}
		})
	}
}

// TestAttemptOwnHeadersWin: were a header that recordhub sets among an
// endpoint's stored headers (the API refuses them; here it is written
// into the column directly), recordhub's value is the one sent.
func TestAttemptOwnHeadersWin(t *testing.T) {
	recv := newReceiver(t, nil)
	db := storetest.NewDB(t, models.SQLite)
	f := newFixture(t, db.Open(t, models.Options{}), recv.URL)
	forged := `{"X-Webhook-Signature":"sha256=forged","Webhook-Signature":"v1,forged","User-Agent":"evil","Content-Type":"text/plain","X-Extra":"kept"}`
	sealed := storetest.SecretBox(t).Seal(forged, "webhook-headers:"+f.endpoint.ID)
	if _, err := db.SQL(t).ExecContext(t.Context(), "UPDATE webhook_endpoints SET headers = ?, header_names = ? WHERE id = ?", sealed, `["X-Extra"]`, f.endpoint.ID); err != nil {
		t.Fatal(err)
	}
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("Attempt: %v", err)
	}
	got := recv.requests()[0]
	if !verifyHex(got.header.Get("X-Webhook-Signature"), got.body, f.secret) || !verifyStandard(got.header, got.body, f.secret) {
		t.Errorf("signatures replaced: %q, %q", got.header.Get("X-Webhook-Signature"), got.header.Get("Webhook-Signature"))
	}
	if got.header.Get("User-Agent") != "recordhub-webhooks/1.2.3" || got.header.Get("Content-Type") != "application/json" || got.header.Get("X-Extra") != "kept" {
		t.Errorf("User-Agent %q, Content-Type %q, X-Extra %q", got.header.Get("User-Agent"), got.header.Get("Content-Type"), got.header.Get("X-Extra"))
	}
}
