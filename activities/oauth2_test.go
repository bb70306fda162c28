package activities

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recordhub/recordhub/activities/authtest"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// tokenReceiver is a receiver that accepts a request only with an access
// token the authorization server issued, valid at the test's clock, and
// not revoked; it counts the expired tokens it was sent.
type tokenReceiver struct {
	*receiver
	mu      sync.Mutex
	revoked map[string]bool
	// expired counts requests that carried a token expired by the clock;
	// refused those whose token did not verify at all, or was revoked.
	expired, refused atomic.Int64
	lastToken        atomic.Value
}

func newTokenReceiver(t *testing.T, as *authtest.Server, clock *storetest.Clock) *tokenReceiver {
	t.Helper()
	tr := &tokenReceiver{revoked: map[string]bool{}}
	tr.receiver = newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			tr.refused.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		exp, err := as.Verify(r.Context(), tok, clock.Now())
		tr.mu.Lock()
		revoked := tr.revoked[tok]
		tr.mu.Unlock()
		switch {
		case err != nil && !exp.IsZero():
			tr.expired.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
		case err != nil || revoked:
			tr.refused.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
		default:
			tr.lastToken.Store(tok)
			w.WriteHeader(http.StatusNoContent)
		}
	})
	return tr
}

// revokeLast makes the receiver refuse the last token it accepted, as
// after a revocation or a rotation of the server's keys.
func (tr *tokenReceiver) revokeLast() {
	tr.mu.Lock()
	tr.revoked[tr.lastToken.Load().(string)] = true
	tr.mu.Unlock()
}

// TestAttemptOAuth2ClientCredentials: an endpoint with auth sends an access
// token from its token endpoint (zitadel/oidc's OpenID provider), which the
// receiver verifies with the provider's keys. The token is cached across
// attempts and refreshed shortly before it expires, an expired token is
// never sent, a 401 gets one fresh token and one resend in the same
// attempt, and a token endpoint that refuses the client or is down fails
// the attempt with auth_failed and its status. The client secret and the
// tokens are in no row and no log line.
func TestAttemptOAuth2ClientCredentials(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			const lifetime = 5 * time.Minute
			clock := storetest.NewClock()
			as := authtest.NewServer(t, clock.Now, lifetime)
			recv := newTokenReceiver(t, as, clock)
			db := storetest.NewDB(t, dialect)
			f := newFixture(t, db.Open(t, models.Options{}), recv.URL+"/hook")
			auth := models.EndpointAuth{
				Type: models.AuthOAuth2ClientCredentials, TokenURL: as.TokenURL(), ClientID: as.ClientID, ClientSecret: as.Secret,
				Scopes: []string{"webhooks:write"}, Audience: "https://receiver.example",
			}
			if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{Auth: &auth}, nil); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			t.Cleanup(func() { tp.Shutdown(t.Context()) })
			d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, Now: clock.Now, Logger: jsonLogger(&logs), TracerProvider: tp})
			attempt := func(wantOK bool) {
				t.Helper()
				_, err := d.Attempt(t.Context(), f.input())
				if (err == nil) != wantOK {
					t.Fatalf("attempt: error %v, want success %v", err, wantOK)
				}
			}

			// Cached across attempts: one token request for three attempts.
			for range 3 {
				attempt(true)
			}
			if got := as.Requests.Load(); got != 1 {
				t.Errorf("%d token requests for 3 attempts, want 1", got)
			}
			if got := as.Audiences(); len(got) != 1 || got[0] != auth.Audience {
				t.Errorf("audience parameters %q, want %q", got, auth.Audience)
			}

			// 20 s before it expires the token is refreshed, not sent.
			clock.Advance(lifetime - 20*time.Second)
			attempt(true)
			if got := as.Requests.Load(); got != 2 {
				t.Errorf("%d token requests after nearing expiry, want 2", got)
			}
			// Past the new token's expiry: a third token, never the old one.
			clock.Advance(lifetime + time.Second)
			attempt(true)
			attempt(true)
			if got := as.Requests.Load(); got != 3 {
				t.Errorf("%d token requests after expiry, want 3", got)
			}
			if n := recv.expired.Load(); n != 0 {
				t.Errorf("the receiver was sent %d expired tokens", n)
			}

			// The receiver refuses the token it accepted: one 401, a fresh
			// token, one resend, within the same attempt and its one row.
			recv.revokeLast()
			before := len(f.rows(t))
			sent := len(recv.requests())
			attempt(true)
			if got := as.Requests.Load(); got != 4 {
				t.Errorf("%d token requests after a 401, want 4", got)
			}
			if got := len(recv.requests()) - sent; got != 2 {
				t.Errorf("the receiver got %d requests in the attempt after the 401, want 2", got)
			}
			rows := f.rows(t)
			if len(rows) != before+1 {
				t.Fatalf("%d rows for the attempt after the 401, want 1", len(rows)-before)
			}
			if last := rows[len(rows)-1]; !last.Succeeded || last.ResponseStatus == nil || *last.ResponseStatus != http.StatusNoContent || last.Error != "" {
				t.Errorf("row of the resent attempt: succeeded %v, status %v, error %q; want the last answer, 204", last.Succeeded, last.ResponseStatus, last.Error)
			}
			if n := recv.refused.Load(); n != 1 {
				t.Errorf("the receiver refused %d requests, want the 1 revoked token", n)
			}

			// The token endpoint refuses the client: auth_failed with its
			// status, nothing sent, retried.
			wrong := auth
			wrong.ClientSecret = "cs-wrong-0c55e2"
			if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{Auth: &wrong}, nil); err != nil {
				t.Fatal(err)
			}
			sent = len(recv.requests())
			out, err := d.Attempt(t.Context(), f.input())
			if err == nil || out.Error != models.DeliveryErrAuthFailed {
				t.Fatalf("attempt with a wrong secret: %+v, %v; want auth_failed", out, err)
			}
			row := f.rows(t)[len(f.rows(t))-1]
			status := int(as.LastStatus.Load())
			if status < 400 || row.ResponseStatus == nil || *row.ResponseStatus != status || out.StatusCode != status {
				t.Errorf("auth_failed row's status %v (output %d), want the token endpoint's %d", row.ResponseStatus, out.StatusCode, status)
			}
			if !strings.Contains(row.ErrorMessage, "token endpoint answered") || !strings.Contains(row.ResponseBody, "invalid_client") {
				t.Errorf("auth_failed row: message %q, body %q", row.ErrorMessage, row.ResponseBody)
			}
			if len(recv.requests()) != sent {
				t.Errorf("the receiver got a request without a token")
			}
			if !isRetryable(err) {
				t.Errorf("auth_failed is not retried: %v", err)
			}

			// The token endpoint is down: auth_failed, no status.
			if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{Auth: &auth}, nil); err != nil {
				t.Fatal(err)
			}
			as.Close()
			out, err = d.Attempt(t.Context(), f.input())
			if err == nil || out.Error != models.DeliveryErrAuthFailed || out.StatusCode != 0 {
				t.Fatalf("attempt with the token endpoint down: %+v, %v; want auth_failed without a status", out, err)
			}
			row = f.rows(t)[len(f.rows(t))-1]
			if !strings.Contains(row.ErrorMessage, "could not get an access token") || row.ResponseStatus != nil {
				t.Errorf("row with the token endpoint down: message %q, status %v", row.ErrorMessage, row.ResponseStatus)
			}

			// Every row's Authorization is masked; no secret and no token is
			// stored or logged.
			for _, r := range f.rows(t) {
				if a := r.RequestHeaders["Authorization"]; r.Error != models.DeliveryErrAuthFailed && (len(a) != 1 || a[0] != models.HeaderMask) {
					t.Errorf("attempt %d row: Authorization %q, want it masked", r.Attempt, a)
				}
			}
			secrets := []string{as.Secret, wrong.ClientSecret, recv.lastToken.Load().(string)}
			assertNoSecrets(t, db, logs.String(), secrets...)
			if len(spans.Ended()) == 0 {
				t.Error("no spans")
			}
			for _, sp := range spans.Ended() {
				for _, a := range sp.Attributes() {
					for _, s := range secrets {
						if strings.Contains(a.Value.String(), s) {
							t.Errorf("span %q attribute %s holds a secret", sp.Name(), a.Key)
						}
					}
				}
			}
		})
	}
}

// assertNoSecrets fails when any of secrets is in a column of an endpoint
// or attempt row, read raw, or in the log.
func assertNoSecrets(t *testing.T, db *storetest.DB, log string, secrets ...string) {
	t.Helper()
	for _, table := range []string{"webhook_endpoints", "webhook_deliveries"} {
		for _, row := range db.Rows(t, "SELECT * FROM "+table) {
			for col, v := range row {
				for _, s := range secrets {
					if strings.Contains(v, s) {
						t.Errorf("%s.%s holds a secret: %q", table, col, v)
					}
				}
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(log, s) {
			t.Errorf("the log holds a secret: %s", log)
		}
	}
}

// TestTokenRequestsPer1000Deliveries measures what a worker asks of a
// token endpoint: 1,000 deliveries, 8 at a time, with 5-minute tokens over
// 15 minutes of the test's clock, cost about one token request per token
// lifetime (4 here: at 0, and as each token nears its expiry).
func TestTokenRequestsPer1000Deliveries(t *testing.T) {
	const lifetime = 5 * time.Minute
	clock := storetest.NewClock()
	as := authtest.NewServer(t, clock.Now, lifetime)
	recv := newTokenReceiver(t, as, clock)
	db := storetest.NewDB(t, models.SQLite)
	f := newFixture(t, db.Open(t, models.Options{}), recv.URL)
	auth := models.EndpointAuth{Type: models.AuthOAuth2ClientCredentials, TokenURL: as.TokenURL(), ClientID: as.ClientID, ClientSecret: as.Secret}
	if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{Auth: &auth}, nil); err != nil {
		t.Fatal(err)
	}
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, Now: clock.Now})
	// 15 rounds of a minute each, the clock moved between rounds: an
	// attempt never sees the clock move under it.
	const deliveries, workers, rounds = 1000, 8, 15
	var sent atomic.Int64
	for r := range rounds {
		n := int64(deliveries * (r + 1) / rounds)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for sent.Add(1) <= n {
					if _, err := d.Attempt(t.Context(), f.input()); err != nil {
						t.Errorf("delivery: %v", err)
					}
				}
				sent.Add(-1)
			})
		}
		wg.Wait()
		clock.Advance(time.Minute)
	}
	t.Logf("%d token requests for %d deliveries (%d at a time, %s tokens, 15 minutes); the receiver saw %d expired tokens",
		as.Requests.Load(), deliveries, workers, lifetime, recv.expired.Load())
	if got := as.Requests.Load(); got < 3 || got > 5 || d.tokenRequests.Load() != got {
		t.Errorf("%d token requests (deliverer counted %d), want about one per token lifetime (3 to 5)", got, d.tokenRequests.Load())
	}
	if recv.expired.Load() != 0 || recv.refused.Load() != 0 {
		t.Errorf("the receiver refused %d tokens and was sent %d expired ones", recv.refused.Load(), recv.expired.Load())
	}
}

// TestAttemptTokenURLBlocked: the token request passes the egress guard
// like the delivery: a token URL whose name resolves, at dial time, to an
// address the guard refuses is a blocked destination, not retried, and
// the receiver gets nothing.
func TestAttemptTokenURLBlocked(t *testing.T) {
	recv := newReceiver(t, nil)
	dns := newFakeDNS(t, map[string][]string{"auth.example": {"127.0.0.2"}})
	f := newFixture(t, storetest.Open(t, models.SQLite), recv.URL)
	auth := models.EndpointAuth{Type: models.AuthOAuth2ClientCredentials, TokenURL: "https://auth.example:8443/oauth/token", ClientID: "c", ClientSecret: "s-0a1b2c"}
	if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{Auth: &auth}, nil); err != nil {
		t.Fatal(err)
	}
	d := newDeliverer(t, f.store, Config{AllowCIDRs: prefixes("127.0.0.1/32"), Resolver: dns.resolver()})
	out, err := d.Attempt(t.Context(), f.input())
	if out.Error != models.DeliveryErrBlockedDestination || isRetryable(err) {
		t.Fatalf("attempt: %+v, %v; want blocked_destination, not retried", out, err)
	}
	if row := f.onlyRow(t); !strings.Contains(row.ErrorMessage, "token endpoint") || !strings.Contains(row.ErrorMessage, "127.0.0.2") {
		t.Errorf("row's message %q, want the token endpoint's address named", row.ErrorMessage)
	}
	if len(recv.requests()) != 0 {
		t.Error("the receiver got a request")
	}
}
