package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/recordhub/recordhub/models"
)

// An endpoint with auth sends an access token from its token endpoint
// (OAuth2 client credentials, RFC 6749 §4.4). Each worker keeps one token
// per endpoint and configuration until shortly before it expires, so it
// asks the token endpoint about once per token lifetime; concurrent
// attempts of one endpoint wait for one token request. The token request
// goes through the same guarded transport as deliveries.

// defaultTokenLifetime is how long a token whose answer gave no expires_in
// is kept (unless the receiver refuses it first).
const defaultTokenLifetime = 5 * time.Minute

// maxTokenRefreshMargin: a token is refreshed this long before it expires,
// or a tenth of its lifetime before when that is shorter.
const maxTokenRefreshMargin = 30 * time.Second

// cachedToken is one endpoint's access token in this worker.
type cachedToken struct {
	// lock is held across a token request; waiting for it gives up with
	// the attempt (a token endpoint that hangs must not queue attempts
	// one timeout after another).
	lock      chan struct{}
	token     string
	refreshAt time.Time
}

func newCachedToken() (*cachedToken, error) { return &cachedToken{lock: make(chan struct{}, 1)}, nil }

// token returns the endpoint's access token: the cached one while it is
// fresh, else a new one from the token endpoint. stale, when not "", is a
// token the receiver refused: it is never returned again. A failure is
// written into row as the token endpoint's answer.
func (d *Deliverer) token(ctx context.Context, s *sender, stale string, row *models.WebhookDelivery) *failure {
	ct, _ := d.tokens.get(s.endpointID, s.authKey, newCachedToken)
	wait, cancel := context.WithTimeout(ctx, d.schedule.AttemptTimeout)
	defer cancel()
	select {
	case ct.lock <- struct{}{}:
	case <-wait.Done():
		return d.fail(row, newAuthError(wait.Err(), ""), false, nil)
	}
	defer func() { <-ct.lock }()
	if ct.token != "" && ct.token != stale && d.now().Before(ct.refreshAt) {
		s.token = ct.token
		return nil
	}
	ct.token = ""
	tok, err := d.fetchToken(ctx, s.auth)
	if err != nil {
		ae := newAuthError(err, s.auth.ClientSecret)
		if ae.status != 0 {
			status := ae.status
			row.ResponseStatus, row.ResponseHeaders, row.ResponseBody = &status, ae.header, ae.body
		}
		return d.fail(row, ae, false, nil)
	}
	now := d.now()
	expiry := tok.Expiry
	if expiry.IsZero() {
		expiry = now.Add(defaultTokenLifetime)
	}
	// A lifetime already over (clocks apart) leaves no margin: the token
	// goes out once, and the next attempt asks again.
	ct.token, ct.refreshAt = tok.AccessToken, expiry.Add(-max(0, min(maxTokenRefreshMargin, expiry.Sub(now)/10)))
	s.token = ct.token
	return nil
}

// fetchToken asks the token endpoint for a token, through the guarded
// transport, client id and secret in HTTP Basic (RFC 6749 §2.3.1), never
// following a redirect.
func (d *Deliverer) fetchToken(ctx context.Context, a *models.EndpointAuth) (*oauth2.Token, error) {
	d.tokenRequests.Add(1)
	if _, err := d.egress.checkStatic(a.TokenURL); err != nil {
		return nil, asBlocked(err, nil)
	}
	cfg := clientcredentials.Config{
		ClientID: a.ClientID, ClientSecret: a.ClientSecret, TokenURL: a.TokenURL, Scopes: a.Scopes,
		AuthStyle: oauth2.AuthStyleInHeader,
	}
	if a.Audience != "" {
		cfg.EndpointParams = url.Values{"audience": {a.Audience}}
	}
	ctx, cancel := context.WithTimeout(ctx, d.schedule.AttemptTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, d.client)
	tok, err := cfg.Token(ctx)
	if err != nil {
		return nil, err
	}
	return tok, nil
}

// authError is a token request that failed, described without the
// client secret: its status and answer when the token endpoint answered,
// else why it could not be reached. It keeps no link to the error it was
// made from, whose text may hold the token endpoint's whole answer.
type authError struct {
	status  int
	header  models.Headers
	body    string
	message string
	// blocked: the token endpoint is a blocked destination.
	blocked *blockedError
}

func (e *authError) Error() string { return e.message }

func newAuthError(err error, secret string) *authError {
	ae := &authError{}
	var (
		re      *oauth2.RetrieveError
		blocked *blockedError
	)
	switch {
	case errors.As(err, &blocked):
		ae.blocked = blocked
		ae.message = "the token endpoint is a blocked destination: " + blocked.describe()
	case errors.As(err, &re) && re.Response != nil:
		ae.status = re.Response.StatusCode
		ae.header = models.Headers(re.Response.Header.Clone())
		ae.body = scrub(string(re.Body), secret)
		ae.message = fmt.Sprintf("the token endpoint answered %d %s", ae.status, http.StatusText(ae.status))
		if re.ErrorCode != "" {
			ae.message += " (" + scrub(re.ErrorCode, secret) + ")"
		}
		if ae.status >= 200 && ae.status <= 299 {
			ae.message = "the token endpoint's answer holds no access token"
		}
	default:
		// No answer: the network's failure, as an attempt's row words it.
		f := classifyCause(err, 0, false, nil)
		msg := f.message
		if f.code == models.DeliveryErrTimeout {
			msg = "no answer in time"
		}
		ae.message = "could not get an access token from the token endpoint: " + scrub(msg, secret)
	}
	return ae
}

// scrub masks the client secret wherever a token endpoint's answer
// repeats it.
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, models.HeaderMask)
}
