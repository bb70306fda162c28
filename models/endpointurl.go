package models

import (
	"fmt"
	"strings"
)

// URLSecretMask stands for the password (or the NATS token) of a broker
// URL wherever the URL is shown: answers, rows, logs, traces, events and
// the console. The endpoint keeps the secret sealed beside the URL
// (url_secret, bound to the endpoint's id); Store.EndpointURL puts it back
// for the attempt that dials.
const URLSecretMask = "****"

func urlSecretAD(id string) string { return "webhook-url-secret:" + id }

// userInfo splits a URL's raw user information: its span in rawURL, and
// the secret part (the password, or the whole of a user given alone: a
// token). ok is false when the URL has none.
func userInfo(rawURL string) (start, end int, secretStart int, ok bool) {
	i := strings.Index(rawURL, "://")
	if i < 0 {
		return 0, 0, 0, false
	}
	start = i + 3
	authEnd := len(rawURL)
	if j := strings.IndexAny(rawURL[start:], "/?#"); j >= 0 {
		authEnd = start + j
	}
	at := strings.LastIndexByte(rawURL[start:authEnd], '@')
	if at < 0 {
		return 0, 0, 0, false
	}
	end = start + at
	secretStart = start
	if c := strings.IndexByte(rawURL[start:end], ':'); c >= 0 {
		secretStart = start + c + 1
	}
	return start, end, secretStart, true
}

// maskURL returns rawURL with its secret replaced by URLSecretMask, and the
// secret as written (still percent-encoded); "" when it has none.
func maskURL(rawURL string) (masked, secret string) {
	_, end, ss, ok := userInfo(rawURL)
	if !ok || ss == end {
		return rawURL, ""
	}
	return rawURL[:ss] + URLSecretMask + rawURL[end:], rawURL[ss:end]
}

// destinationKey is what must stay the same for a masked URL to keep the
// stored secret: scheme, user and host, everything up to the path.
func destinationKey(masked string) string {
	i := strings.Index(masked, "://")
	if i < 0 {
		return masked
	}
	if j := strings.IndexAny(masked[i+3:], "/?#"); j >= 0 {
		return strings.ToLower(masked[:i+3+j])
	}
	return strings.ToLower(masked)
}

// setEndpointURL seals the credentials of a broker URL that an input sets
// and leaves e.URL masked. A URL whose secret is the mask keeps the stored
// one, so that a URL read back from an answer can be sent again, but only
// for the same scheme, user and host: the stored password never goes to
// another destination. An http URL holds no credentials (the egress guard
// refuses user information there).
func (s *Store) setEndpointURL(e *WebhookEndpoint, rawURL string, stored *WebhookEndpoint) error {
	e.URL = rawURL
	e.URLSecret = ""
	if !IsBrokerURL(rawURL) {
		return nil
	}
	if len(rawURL) > MaxURLBytes {
		return Errorf(KindInvalidURL, "url %s", tooLong(MaxURLBytes, len(rawURL)))
	}
	if _, err := ParseBrokerURL(rawURL); err != nil {
		return Errorf(KindInvalidURL, "%s", err.Error())
	}
	masked, secret := maskURL(rawURL)
	switch {
	case secret == "":
		return nil
	case secret == URLSecretMask:
		if stored == nil || stored.URLSecret == "" || destinationKey(stored.URL) != destinationKey(masked) {
			return Errorf(KindInvalidURL, "the URL's password is %q, the mask that answers show: send the real password (the stored one is kept only for the same scheme, user and host)", URLSecretMask)
		}
		e.URL, e.URLSecret = masked, stored.URLSecret
	default:
		e.URL, e.URLSecret = masked, s.box.Seal(secret, urlSecretAD(e.ID))
	}
	return nil
}

// EndpointURL returns the endpoint's URL with its credentials in clear:
// what the attempt dials. Everything else shows e.URL, masked.
func (s *Store) EndpointURL(e *WebhookEndpoint) (string, error) {
	if e.URLSecret == "" {
		return e.URL, nil
	}
	secret, err := s.box.Open(e.URLSecret, urlSecretAD(e.ID))
	if err != nil {
		return "", fmt.Errorf("endpoint url credentials: %w", err)
	}
	_, end, ss, ok := userInfo(e.URL)
	if !ok || e.URL[ss:end] != URLSecretMask {
		return "", fmt.Errorf("endpoint url credentials: the stored URL has no masked secret")
	}
	return e.URL[:ss] + secret + e.URL[end:], nil
}

// brokerCredentialErrors refuses credentials that a broker URL cannot use:
// OAuth2 auth (an HTTP Authorization header), and TLS material on a
// plain-text amqp URL.
func brokerCredentialErrors(e *WebhookEndpoint) []FieldError {
	kind := DestinationKind(e.URL)
	if kind == DestinationHTTP {
		return nil
	}
	var errs []FieldError
	if e.AuthInfo.Set() {
		errs = append(errs, FieldError{Field: "auth", Message: "applies to http and https endpoints only: a broker URL carries its login in the URL"})
	}
	if e.TLSInfo.Set() && kind == DestinationAMQP && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(e.URL)), "amqps:") {
		errs = append(errs, FieldError{Field: "tls", Message: "applies to amqps, nats, http and https URLs: amqp:// is plain text"})
	}
	return errs
}
