package activities

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// loopback is the test receivers' network: exempted only in tests.

func TestAttemptDelivers(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("X-Receiver", "yes")
				w.WriteHeader(http.StatusAccepted)
				io.WriteString(w, `{"ok":true}`)
			})
			f := newFixture(t, storetest.Open(t, dialect), recv.URL+"/hooks?src=recordhub")
			reg := prometheus.NewRegistry()
			d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, Metrics: NewMetrics(reg)})
			in := f.input()
			in.ReplayOf = "whd_original"

			out, err := d.Attempt(t.Context(), in)
			if err != nil {
				t.Fatalf("Attempt: %v", err)
			}
			row := f.onlyRow(t)
			if diff := cmp.Diff(out, AttemptOutput{DeliveryID: row.ID, Attempt: 1, StatusCode: http.StatusAccepted}); diff != "" {
				t.Errorf("output (-got +want):\n%s", diff)
			}

			reqs := recv.requests()
			if len(reqs) != 1 {
				t.Fatalf("receiver got %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if string(got.body) != f.event.Payload {
				t.Errorf("body = %s, want the stored payload byte for byte: %s", got.body, f.event.Payload)
			}
			if !verifyHex(got.header.Get("X-Webhook-Signature"), got.body, f.secret) {
				t.Errorf("X-Webhook-Signature %q does not verify", got.header.Get("X-Webhook-Signature"))
			}
			if !verifyStandard(got.header, got.body, f.secret) {
				t.Errorf("webhook-signature %q does not verify", got.header.Get("webhook-signature"))
			}
			if verifyHex(got.header.Get("X-Webhook-Signature"), got.body, "whsec_wrong") || verifyStandard(got.header, got.body, "whsec_wrong") {
				t.Error("a wrong secret verifies")
			}
			ts := strconv.FormatInt(testNow.Unix(), 10)
			wantHeaders := map[string]string{
				"Content-Type":        "application/json",
				"User-Agent":          "recordhub-webhooks/1.2.3",
				"X-Webhook-Event":     models.EventRecordCreated,
				"X-Webhook-Id":        f.event.ID,
				"X-Webhook-Attempt":   "1",
				"X-Webhook-Timestamp": ts,
				"Webhook-Id":          f.event.ID,
				"Webhook-Timestamp":   ts,
				"Accept-Encoding":     "",
				// Sent only during a rotation grace.
				"X-Webhook-Signature-Previous": "",
			}
			gotHeaders := map[string]string{}
			for k := range wantHeaders {
				gotHeaders[k] = got.header.Get(k)
			}
			if diff := cmp.Diff(gotHeaders, wantHeaders); diff != "" {
				t.Errorf("headers (-got +want):\n%s", diff)
			}
			if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 1 {
				t.Errorf("webhook-signature has %d signatures outside a rotation, want 1", n)
			}

			// The row: what was sent, exactly; what came back.
			sent := models.Headers(got.header.Clone())
			sent["Host"] = []string{got.host}
			status := http.StatusAccepted
			want := models.WebhookDelivery{
				ID: out.DeliveryID, TenantID: f.tenantID, EventID: f.event.ID, EventType: models.EventRecordCreated, RecordID: f.event.RecordID,
				EndpointID: f.endpoint.ID, Attempt: 1, ReplayOf: ptr("whd_original"),
				RequestURL: recv.URL + "/hooks?src=recordhub", RequestHeaders: sent, RequestBody: f.event.Payload,
				ResponseStatus: &status, ResponseBody: `{"ok":true}`,
				RemoteIP: "127.0.0.1", StartedAt: testNow, FinishedAt: testNow, Succeeded: true,
			}
			if diff := cmp.Diff(row, want,
				cmpopts.IgnoreFields(models.WebhookDelivery{}, "ResponseHeaders", "DurationMS", "DNSMS", "ConnectMS", "TLSMS", "FirstByteMS"),
				cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
			); diff != "" {
				t.Errorf("row (-got +want):\n%s", diff)
			}
			if got := row.ResponseHeaders["X-Receiver"]; !cmp.Equal(got, []string{"yes"}) {
				t.Errorf("stored response header X-Receiver = %v, want [yes]", got)
			}
			if row.ConnectMS == nil || row.FirstByteMS == nil || row.DNSMS != nil || row.TLSMS != nil {
				t.Errorf("timings dns=%v connect=%v tls=%v first byte=%v: want connect and first byte only (an IP literal, plain HTTP)",
					row.DNSMS, row.ConnectMS, row.TLSMS, row.FirstByteMS)
			}
			if got := attemptsCounted(t, reg, "success"); got != 1 {
				t.Errorf("success attempts = %v, want 1", got)
			}
			if got := histogramCount(t, reg, "recordhub_webhook_attempt_duration_seconds"); got != 1 {
				t.Errorf("attempt durations observed = %d, want 1", got)
			}
		})
	}
}

// TestAttemptRotationGrace: during a rotation grace both secrets sign
// Webhook-Signature; X-Webhook-Signature carries the current one and
// X-Webhook-Signature-Previous the previous one; after the grace only the
// current secret signs.
func TestAttemptRotationGrace(t *testing.T) {
	recv := newReceiver(t, nil)
	clock := storetest.NewClock()
	f := newFixture(t, storetest.OpenWithClock(t, models.SQLite, clock.Now), recv.URL)
	_, current, err := f.store.RotateEndpointSecret(t.Context(), f.tenantID, f.endpoint.ID, 3600)
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	previous := f.secret
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})

	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("Attempt in grace: %v", err)
	}
	clock.Advance(time.Hour + time.Second)
	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("Attempt after grace: %v", err)
	}
	reqs := recv.requests()
	if len(reqs) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(reqs))
	}
	type verdict struct{ HexCurrent, HexPrevious, PrevHexCurrent, PrevHexPrevious, StdCurrent, StdPrevious bool }
	check := func(r received) verdict {
		return verdict{
			HexCurrent:      verifyHex(r.header.Get("X-Webhook-Signature"), r.body, current),
			HexPrevious:     verifyHex(r.header.Get("X-Webhook-Signature"), r.body, previous),
			PrevHexCurrent:  verifyHex(r.header.Get("X-Webhook-Signature-Previous"), r.body, current),
			PrevHexPrevious: verifyHex(r.header.Get("X-Webhook-Signature-Previous"), r.body, previous),
			StdCurrent:      verifyStandard(r.header, r.body, current),
			StdPrevious:     verifyStandard(r.header, r.body, previous),
		}
	}
	if diff := cmp.Diff(check(reqs[0]), verdict{HexCurrent: true, PrevHexPrevious: true, StdCurrent: true, StdPrevious: true}); diff != "" {
		t.Errorf("in grace (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(check(reqs[1]), verdict{HexCurrent: true, StdCurrent: true}); diff != "" {
		t.Errorf("after grace (-got +want):\n%s", diff)
	}
	if n := len(strings.Fields(reqs[0].header.Get("webhook-signature"))); n != 2 {
		t.Errorf("webhook-signature in grace has %d signatures, want 2", n)
	}
	for i, r := range reqs {
		if r.header.Get("X-Webhook-Id") != f.event.ID || r.header.Get("Webhook-Id") != f.event.ID {
			t.Errorf("request %d: ids %q, %q; want the event id on every attempt", i, r.header.Get("X-Webhook-Id"), r.header.Get("Webhook-Id"))
		}
	}
}

// failureCase is a delivery attempt that must fail, and leave its row.
type failureCase struct {
	name string
	// setup returns the endpoint URL and the Deliverer's config; it may
	// start receivers and note how many requests they must end up with.
	setup func(t *testing.T, c *caseEnv) (string, Config)
	// change, when set, alters the fixture before the attempt.
	change func(t *testing.T, f *fixture, in *AttemptInput)

	code      string
	errType   string
	retryable bool
	status    int // 0: no response
	respBody  string
	// sent: the row holds the request (every case that reached the
	// point of building it).
	sent bool
}

type caseEnv struct {
	dns    *fakeDNS
	counts []func(t *testing.T)
}

// expectHits makes the test check that r got exactly n requests.
func (c *caseEnv) expectHits(r *receiver, n int) {
	c.counts = append(c.counts, func(t *testing.T) {
		t.Helper()
		if got := len(r.requests()); got != n {
			t.Errorf("%s got %d requests, want %d", r.URL, got, n)
		}
	})
}

var failureCases = []failureCase{
	{
		name: "500 is retried and its response kept",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("X-Trace", "abc")
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, "boom")
			})
			c.expectHits(r, 1)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		code: models.DeliveryErrHTTPStatus, errType: ErrTypeDeliveryFailed, retryable: true,
		status: 500, respBody: "boom", sent: true,
	},
	{
		name: "302 fails and is not followed",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			target := newReceiver(t, nil)
			r := newReceiver(t, func(w http.ResponseWriter, req *http.Request) {
				http.Redirect(w, req, target.URL+"/elsewhere", http.StatusFound)
			})
			c.expectHits(r, 1)
			c.expectHits(target, 0)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		code: models.DeliveryErrHTTPStatus, errType: ErrTypeDeliveryFailed, retryable: true,
		status: 302, sent: true,
	},
	{
		name: "redirect to a private address is not followed",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, func(w http.ResponseWriter, req *http.Request) {
				http.Redirect(w, req, "http://10.0.0.1/internal", http.StatusTemporaryRedirect)
			})
			c.expectHits(r, 1)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		code: models.DeliveryErrHTTPStatus, errType: ErrTypeDeliveryFailed, retryable: true,
		status: 307, sent: true,
	},
	{
		name: "slow receiver times out",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			release := make(chan struct{})
			r := newReceiver(t, func(w http.ResponseWriter, req *http.Request) {
				select {
				case <-req.Context().Done():
				case <-release:
				}
			})
			t.Cleanup(func() { close(release) }) // before the server closes
			return r.URL, Config{AllowCIDRs: loopback, Schedule: Schedule{AttemptTimeout: 200 * time.Millisecond}}
		},
		code: models.DeliveryErrTimeout, errType: ErrTypeDeliveryFailed, retryable: true, sent: true,
	},
	{
		name: "refused connection",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			return "http://" + addr + "/hook", Config{AllowCIDRs: loopback}
		},
		code: models.DeliveryErrConnectionRefused, errType: ErrTypeDeliveryFailed, retryable: true, sent: true,
	},
	{
		name: "receiver hangs up",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
			})
			c.expectHits(r, 1)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		code: models.DeliveryErrConnection, errType: ErrTypeDeliveryFailed, retryable: true, sent: true,
	},
	{
		name: "DNS failure",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			return "http://nxdomain.example.test/hook", Config{AllowCIDRs: loopback, Resolver: c.dns.resolver()}
		},
		code: models.DeliveryErrDNS, errType: ErrTypeDeliveryFailed, retryable: true, sent: true,
	},
	{
		name: "TLS failure",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newTLSReceiver(t, nil) // its certificate is trusted by no one
			c.expectHits(r, 0)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		code: models.DeliveryErrTLS, errType: ErrTypeDeliveryFailed, retryable: true, sent: true,
	},
	{
		name: "loopback receiver without the exemption is blocked",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, nil)
			c.expectHits(r, 0)
			return r.URL, Config{}
		},
		code: models.DeliveryErrBlockedDestination, errType: ErrTypeBlockedDestination, sent: true,
	},
	{
		name: "a name resolving to loopback is blocked by the dialer",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, nil)
			c.expectHits(r, 0)
			c.dns.set("sneaky.example.test", "127.0.0.1")
			return "http://sneaky.example.test:" + port(t, r.URL) + "/", Config{Resolver: c.dns.resolver()}
		},
		code: models.DeliveryErrBlockedDestination, errType: ErrTypeBlockedDestination, sent: true,
	},
	{
		name: "a URL the rules refuse is blocked before any DNS",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			return "http://0x7f.0.0.1/", Config{}
		},
		code: models.DeliveryErrBlockedDestination, errType: ErrTypeBlockedDestination, sent: true,
	},
	{
		name: "disabled endpoint",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, nil)
			c.expectHits(r, 0)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		change: func(t *testing.T, f *fixture, _ *AttemptInput) {
			if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{Enabled: ptr(false)},
				func(context.Context, string) error { return nil }); err != nil {
				t.Fatalf("disable endpoint: %v", err)
			}
		},
		code: models.DeliveryErrEndpointDisabled, errType: ErrTypeEndpointDisabled,
	},
	{
		name: "deleted endpoint",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, nil)
			c.expectHits(r, 0)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		change: func(t *testing.T, f *fixture, _ *AttemptInput) {
			if err := f.store.DeleteEndpoint(t.Context(), f.tenantID, f.endpoint.ID); err != nil {
				t.Fatalf("delete endpoint: %v", err)
			}
		},
		code: models.DeliveryErrEndpointGone, errType: ErrTypeEndpointGone,
	},
	{
		name: "unknown event",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, nil)
			c.expectHits(r, 0)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		change: func(t *testing.T, f *fixture, in *AttemptInput) { in.EventID = "evt_missing" },
		code:   DeliveryErrEventGone, errType: ErrTypeEventGone,
	},
	{
		name: "another tenant's endpoint is gone",
		setup: func(t *testing.T, c *caseEnv) (string, Config) {
			r := newReceiver(t, nil)
			c.expectHits(r, 0)
			return r.URL, Config{AllowCIDRs: loopback}
		},
		change: func(t *testing.T, f *fixture, in *AttemptInput) {
			other, _, _, err := f.store.CreateTenant(t.Context(), "other", 600)
			if err != nil {
				t.Fatal(err)
			}
			ep, _, err := f.store.CreateEndpoint(t.Context(), other.ID, models.EndpointInput{
				URL: ptr("http://127.0.0.1:9/"), Events: &[]string{models.EventRecordCreated},
			}, func(context.Context, string) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			in.EndpointID = ep.ID
		},
		code: models.DeliveryErrEndpointGone, errType: ErrTypeEndpointGone,
	},
}

func TestAttemptFailures(t *testing.T) {
	for _, tc := range failureCases {
		t.Run(tc.name, func(t *testing.T) {
			runFailure(t, tc, models.SQLite)
		})
	}
}

// TestAttemptFailureRowsPostgres stores failed attempts' rows on
// PostgreSQL too: nullable status and timings, empty fields.
func TestAttemptFailureRowsPostgres(t *testing.T) {
	for _, tc := range failureCases {
		switch tc.code {
		case models.DeliveryErrHTTPStatus, models.DeliveryErrTimeout, models.DeliveryErrBlockedDestination, models.DeliveryErrEndpointGone:
		default:
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			runFailure(t, tc, models.Postgres)
		})
	}
}

func runFailure(t *testing.T, tc failureCase, dialect models.Dialect) {
	t.Helper()
	env := &caseEnv{dns: newFakeDNS(t, nil)}
	endpointURL, cfg := tc.setup(t, env)
	f := newFixture(t, storetest.Open(t, dialect), endpointURL)
	reg := prometheus.NewRegistry()
	cfg.Metrics = NewMetrics(reg)
	var logs syncBuffer
	cfg.Logger = jsonLogger(&logs)
	d := newDeliverer(t, f.store, cfg)
	in := f.input()
	if tc.change != nil {
		tc.change(t, f, &in)
	}

	out, err := d.Attempt(t.Context(), in)

	for _, check := range env.counts {
		check(t)
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("Attempt error = %v, want a Temporal application error", err)
	}
	type verdict struct {
		Type         string
		NonRetryable bool
		Code         string
		Benign       bool
	}
	// Every failure here is the receiver's or the tenant's doing: benign,
	// so that the SDK does not log it as an error.
	got := verdict{appErr.Type(), appErr.NonRetryable(), out.Error, appErr.Category() == temporal.ApplicationErrorCategoryBenign}
	if diff := cmp.Diff(got, verdict{tc.errType, !tc.retryable, tc.code, true}); diff != "" {
		t.Errorf("error %v (-got +want):\n%s", err, diff)
	}
	var details AttemptOutput
	if err := appErr.Details(&details); err != nil || details != out {
		t.Errorf("error details = %+v (%v), want the output %+v", details, err, out)
	}
	row := f.onlyRow(t)
	t.Logf("row error %s: %s", row.Error, row.ErrorMessage)
	var status int
	if row.ResponseStatus != nil {
		status = *row.ResponseStatus
	}
	type rowSummary struct {
		ID, Error, ResponseBody string
		Status                  int
		Succeeded, HasMessage   bool
		RequestBody             string
		Attempt                 int
	}
	wantBody := ""
	if tc.sent {
		wantBody = f.event.Payload
	}
	gotRow := rowSummary{row.ID, row.Error, row.ResponseBody, status, row.Succeeded, row.ErrorMessage != "", row.RequestBody, row.Attempt}
	want := rowSummary{out.DeliveryID, tc.code, tc.respBody, tc.status, false, true, wantBody, 1}
	if diff := cmp.Diff(gotRow, want); diff != "" {
		t.Errorf("row (-got +want):\n%s\nmessage: %s", diff, row.ErrorMessage)
	}
	if tc.sent && len(row.RequestHeaders["X-Webhook-Signature"]) != 1 {
		t.Errorf("row request headers %v: want the signed headers", row.RequestHeaders)
	}
	if tc.code == models.DeliveryErrHTTPStatus && row.ResponseHeaders["Content-Length"] == nil {
		t.Errorf("row response headers %v: want the receiver's", row.ResponseHeaders)
	}
	if got := attemptsCounted(t, reg, tc.code); got != 1 {
		t.Errorf("attempts{outcome=%q} = %v, want 1", tc.code, got)
	}
	wantLine := map[string]any{
		"level": "WARN", "msg": "webhook attempt failed",
		"event_id": in.EventID, "event_type": row.EventType, "endpoint_id": in.EndpointID, "tenant_id": in.TenantID,
		"attempt": 1.0, "error": tc.code, "message": row.ErrorMessage, "delivery_id": row.ID, "workflow_id": "",
	}
	if tc.status != 0 {
		wantLine["status"] = float64(tc.status)
	}
	if tc.retryable {
		wantLine["next_attempt_in"] = DefaultRetryInitial.String()
	} else {
		wantLine["last_attempt"] = true
	}
	if diff := cmp.Diff(logLines(t, logs.String()), []map[string]any{wantLine}, cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "time" })); diff != "" {
		t.Errorf("log (-got +want):\n%s", diff)
	}
}

// TestAttemptDNSRebinding: a name that passed the subscription check and
// then resolves to a blocked address is refused when the attempt dials.
func TestAttemptDNSRebinding(t *testing.T) {
	dns := newFakeDNS(t, map[string][]string{"rebind.example.test": {"93.184.215.14"}})
	recv := newReceiver(t, nil)
	endpointURL := "http://rebind.example.test:" + port(t, recv.URL) + "/hook"
	g := &Guard{Resolver: dns.resolver()}
	if err := g.CheckURL(t.Context(), endpointURL); err != nil {
		t.Fatalf("subscription check: %v", err)
	}
	f := newFixture(t, storetest.Open(t, models.SQLite), endpointURL)
	dns.set("rebind.example.test", "127.0.0.1")
	d := newDeliverer(t, f.store, Config{Resolver: dns.resolver()})

	_, err := d.Attempt(t.Context(), f.input())
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeBlockedDestination || !appErr.NonRetryable() {
		t.Fatalf("Attempt error = %v, want non-retryable %s", err, ErrTypeBlockedDestination)
	}
	if n := len(recv.requests()); n != 0 {
		t.Errorf("receiver got %d requests, want none", n)
	}
	row := f.onlyRow(t)
	if row.Error != models.DeliveryErrBlockedDestination || row.RemoteIP != "127.0.0.1" || !strings.Contains(row.ErrorMessage, "loopback") {
		t.Errorf("row error %q, remote ip %q, message %q: want blocked_destination at 127.0.0.1, loopback", row.Error, row.RemoteIP, row.ErrorMessage)
	}

	// Exempted, the same name is delivered: the dialer used the resolver.
	d = newDeliverer(t, f.store, Config{Resolver: dns.resolver(), AllowCIDRs: loopback})
	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("exempted Attempt: %v", err)
	}
	if n := len(recv.requests()); n != 1 {
		t.Errorf("receiver got %d requests, want 1", n)
	}
	if rows := f.rows(t); len(rows) != 2 || rows[1].DNSMS == nil {
		t.Errorf("rows %+v: want a second row with a DNS time", rows)
	}
}

// TestAttemptTLS: a trusted receiver over TLS, with the handshake timed.
func TestAttemptTLS(t *testing.T) {
	recv := newTLSReceiver(t, nil)
	f := newFixture(t, storetest.Open(t, models.SQLite), recv.URL)
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	pool := x509.NewCertPool()
	pool.AddCert(recv.Certificate())
	d.transport.TLSClientConfig.RootCAs = pool

	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("Attempt: %v", err)
	}
	row := f.onlyRow(t)
	if !row.Succeeded || row.TLSMS == nil || row.ConnectMS == nil {
		t.Errorf("row succeeded=%v tls=%v connect=%v: want success with TLS and connect times", row.Succeeded, row.TLSMS, row.ConnectMS)
	}
}

// TestAttemptStoresAnyResponseBody: whatever bytes a receiver answers, the
// row is written, holding at most 4 KiB of valid UTF-8.
func TestAttemptStoresAnyResponseBody(t *testing.T) {
	long := strings.Repeat("a", models.MaxResponseBody-1) + "é" + "tail" // é straddles the 4 KiB line
	tests := []struct {
		name, body, want string
	}{
		{"cut on a character boundary", long, strings.Repeat("a", models.MaxResponseBody-1)},
		{"invalid UTF-8 and NUL", "ok\xff\xfe\x00end", "ok\uFFFD\uFFFDend"},
		{"empty", "", ""},
	}
	for _, dialect := range storetest.Dialects {
		for _, tc := range tests {
			t.Run(string(dialect)+"/"+tc.name, func(t *testing.T) {
				recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "application/octet-stream")
					io.WriteString(w, tc.body)
				})
				f := newFixture(t, storetest.Open(t, dialect), recv.URL)
				d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
				if _, err := d.Attempt(t.Context(), f.input()); err != nil {
					t.Fatalf("Attempt: %v", err)
				}
				if got := f.onlyRow(t).ResponseBody; got != tc.want {
					t.Errorf("stored body (%d bytes) = %.40q..., want (%d bytes) %.40q...", len(got), got, len(tc.want), tc.want)
				}
			})
		}
	}
}

// TestAttemptReusesConnections: attempts to one receiver share a connection.
func TestAttemptReusesConnections(t *testing.T) {
	var (
		mu    sync.Mutex
		conns = map[string]bool{}
	)
	recv := newReceiver(t, func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
	})
	f := newFixture(t, storetest.Open(t, models.SQLite), recv.URL)
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	for range 3 {
		if _, err := d.Attempt(t.Context(), f.input()); err != nil {
			t.Fatalf("Attempt: %v", err)
		}
	}
	if len(conns) != 1 {
		t.Errorf("3 attempts used %d connections, want 1", len(conns))
	}
	rows := f.rows(t)
	if len(rows) != 3 || rows[2].ConnectMS != nil || rows[2].FirstByteMS == nil {
		t.Errorf("want 3 rows, the last on a reused connection (no connect time): %+v", rows)
	}
}

// TestAttemptRowWriteFails: an attempt whose in-flight row cannot be
// written sends nothing; one whose outcome cannot be written fails
// retryably, even after the receiver accepted it. Both leave the retry to
// Temporal with ErrTypeStore.
func TestAttemptRowWriteFails(t *testing.T) {
	tests := []struct {
		name      string
		store     func(*models.Store) Store
		wantSends int
	}{
		{"in-flight row", func(s *models.Store) Store { return failingInsert{s} }, 0},
		{"outcome", func(s *models.Store) Store { return failingFinish{s} }, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recv := newReceiver(t, nil)
			f := newFixture(t, storetest.Open(t, models.SQLite), recv.URL)
			var logs syncBuffer
			d := newDeliverer(t, tc.store(f.store), Config{AllowCIDRs: loopback, Logger: jsonLogger(&logs)})
			_, err := d.Attempt(t.Context(), f.input())
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != ErrTypeStore || appErr.NonRetryable() {
				t.Fatalf("Attempt error = %v, want retryable %s", err, ErrTypeStore)
			}
			// An operator must act: the SDK logs this error as an error,
			// which it would not do for a benign one.
			if appErr.Category() == temporal.ApplicationErrorCategoryBenign {
				t.Errorf("store failure %v is benign", err)
			}
			if got := logs.String(); got != "" {
				t.Errorf("a store failure logged %q; the SDK's error line is the one", got)
			}
			if !errors.Is(err, errDiskFull) {
				t.Errorf("error %v does not wrap the store's", err)
			}
			if n := len(recv.requests()); n != tc.wantSends {
				t.Errorf("receiver got %d requests, want %d", n, tc.wantSends)
			}
		})
	}
}

var errDiskFull = errors.New("disk full")

type failingInsert struct{ *models.Store }

func (failingInsert) InsertAttempt(context.Context, *models.WebhookDelivery) error {
	return errDiskFull
}

type failingFinish struct{ *models.Store }

func (failingFinish) FinishAttempt(context.Context, *models.WebhookDelivery) error {
	return errDiskFull
}

func (failingFinish) FinishDelivery(context.Context, *models.WebhookDelivery, models.DeliveryEnd) (error, error) {
	return nil, errDiskFull
}

// TestAttemptAsActivity runs Attempt as a Temporal activity: the row carries
// the activity's attempt and workflow execution, and a blocked destination
// fails it for good.
func TestAttemptAsActivity(t *testing.T) {
	recv := newReceiver(t, nil)
	f := newFixture(t, storetest.Open(t, models.SQLite), recv.URL)
	var suite testsuite.WorkflowTestSuite

	env := suite.NewTestActivityEnvironment()
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	env.RegisterActivity(d)
	val, err := env.ExecuteActivity(d.Attempt, f.input())
	if err != nil {
		t.Fatalf("ExecuteActivity: %v", err)
	}
	var out AttemptOutput
	if err := val.Get(&out); err != nil {
		t.Fatal(err)
	}
	row := f.onlyRow(t)
	type ids struct {
		DeliveryID, WorkflowID, RunID string
		Attempt                       int
	}
	if diff := cmp.Diff(ids{row.ID, row.WorkflowID, row.RunID, row.Attempt}, ids{out.DeliveryID, "default-test-workflow-id", "default-test-run-id", 1}); diff != "" {
		t.Errorf("row (-got +want):\n%s", diff)
	}

	env = suite.NewTestActivityEnvironment()
	blocked := newDeliverer(t, f.store, Config{})
	env.RegisterActivity(blocked)
	_, err = env.ExecuteActivity(blocked.Attempt, f.input())
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeBlockedDestination || !appErr.NonRetryable() {
		t.Errorf("blocked ExecuteActivity error = %v, want non-retryable %s", err, ErrTypeBlockedDestination)
	}
}

func TestNewDelivererRefuses(t *testing.T) {
	tests := []struct {
		name  string
		store Store
		cfg   Config
	}{
		{"no store", nil, Config{}},
		{"negative timeout", nopStore{}, Config{Schedule: Schedule{AttemptTimeout: -time.Second}}},
		{"invalid prefix", nopStore{}, Config{AllowCIDRs: []netip.Prefix{{}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewDeliverer(tc.store, tc.cfg); err == nil {
				t.Error("NewDeliverer succeeded, want an error")
			}
		})
	}
	d, err := NewDeliverer(nopStore{}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d.schedule != DefaultSchedule() || d.userAgent != "recordhub-webhooks/dev" || d.transport.Proxy != nil {
		t.Errorf("defaults: schedule %+v, user agent %q, proxy set %v", d.schedule, d.userAgent, d.transport.Proxy != nil)
	}
}

// attemptsCounted returns recordhub_webhook_attempts_total{outcome}.
func attemptsCounted(t *testing.T, g prometheus.Gatherer, outcome string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "recordhub_webhook_attempts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no attempts counter for outcome %q", outcome)
	return 0
}

func histogramCount(t *testing.T, g prometheus.Gatherer, name string) uint64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no histogram %s", name)
	return 0
}

func port(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}
