package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Endpoint credentials: a receiver may ask for more than the signature to
// trust a request: an OAuth2 access token (client credentials, RFC 6749
// §4.4) in Authorization, and a client certificate (mutual TLS), with its
// own CA bundle to verify the receiver by. Every secret is kept like the
// signing secret: the whole configuration sealed in one column and bound to
// the endpoint's id, never answered, logged or traced; answers show the
// parts that are no secret from a clear column beside it (AuthInfo,
// TLSInfo), so reading an endpoint opens nothing.

// AuthOAuth2ClientCredentials is the one type of EndpointAuth.
const AuthOAuth2ClientCredentials = "oauth2_client_credentials"

// Bounds of an endpoint's credentials.
const (
	MaxClientIDBytes     = 256
	MaxClientSecretBytes = 1024
	MaxAudienceBytes     = 1024
	MaxScopes            = 20
	MaxScopeBytes        = 128
	// MaxPEMBytes bounds each PEM member of tls: a certificate chain, its
	// key, a CA bundle.
	MaxPEMBytes = 64 << 10
)

// EndpointAuth is how an endpoint's requests get their access token: from
// TokenURL, with the client credentials grant.
type EndpointAuth struct {
	Type         string   `json:"type"`
	TokenURL     string   `json:"token_url"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Scopes       []string `json:"scopes"`
	// Audience, when set, is sent as the token request's audience
	// parameter (Auth0, Okta and others require it).
	Audience string `json:"audience"`
}

// EndpointTLS is an endpoint's TLS material, PEM: the client certificate
// (its chain may follow it) with its private key, presented when the
// receiver asks for one; and the CA certificates the receiver's
// certificate is verified against instead of the system's roots.
type EndpointTLS struct {
	ClientCertificate string `json:"client_certificate"`
	ClientKey         string `json:"client_key"`
	CACertificates    string `json:"ca_certificates"`
}

// EndpointAuthInfo is EndpointAuth without its secret, what answers show;
// its zero value (Type "") means the endpoint has no auth. It is stored as
// JSON text, "" for none.
type EndpointAuthInfo struct {
	Type     string   `json:"type"`
	TokenURL string   `json:"token_url"`
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
	Audience string   `json:"audience"`
}

// EndpointTLSInfo describes an endpoint's TLS material without its key;
// its zero value means the endpoint has none. Stored as JSON text, "" for
// none.
type EndpointTLSInfo struct {
	// ClientCertificate is the leaf of the client certificate; nil when
	// the endpoint presents none.
	ClientCertificate *CertificateInfo `json:"client_certificate"`
	// CACertificates are the bundle's certificates; empty when the system's
	// roots verify the receiver.
	CACertificates []CertificateInfo `json:"ca_certificates"`
}

// Set reports whether the endpoint has auth.
func (a EndpointAuthInfo) Set() bool { return a.Type != "" }

// Set reports whether the endpoint has TLS material.
func (t EndpointTLSInfo) Set() bool { return t.ClientCertificate != nil || len(t.CACertificates) > 0 }

// Value implements driver.Valuer.
func (a EndpointAuthInfo) Value() (driver.Value, error) {
	if !a.Set() {
		return "", nil
	}
	return jsonText(a)
}

// Scan implements sql.Scanner.
func (a *EndpointAuthInfo) Scan(src any) error {
	*a = EndpointAuthInfo{}
	return scanJSONText(src, a)
}

// Value implements driver.Valuer.
func (t EndpointTLSInfo) Value() (driver.Value, error) {
	if !t.Set() {
		return "", nil
	}
	return jsonText(t)
}

// Scan implements sql.Scanner.
func (t *EndpointTLSInfo) Scan(src any) error {
	*t = EndpointTLSInfo{}
	return scanJSONText(src, t)
}

func jsonText(v any) (driver.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	return string(b), nil
}

// scanJSONText scans a JSON text column where "" (and NULL) mean none.
func scanJSONText(src any, dst any) error {
	switch v := src.(type) {
	case string:
		if v == "" {
			return nil
		}
	case []byte:
		if len(v) == 0 {
			return nil
		}
	}
	return scanJSON(src, dst)
}

func authAD(endpointID string) string { return "webhook-auth:" + endpointID }
func tlsAD(endpointID string) string  { return "webhook-tls:" + endpointID }

// EndpointCredentials returns the endpoint's auth and TLS material in
// clear; nil for what it has none of.
func (s *Store) EndpointCredentials(e *WebhookEndpoint) (*EndpointAuth, *EndpointTLS, error) {
	var (
		auth *EndpointAuth
		t    *EndpointTLS
	)
	if e.Auth != "" {
		auth = &EndpointAuth{}
		if err := s.openJSON(e.Auth, authAD(e.ID), auth); err != nil {
			return nil, nil, fmt.Errorf("endpoint auth: %w", err)
		}
	}
	if e.TLS != "" {
		t = &EndpointTLS{}
		if err := s.openJSON(e.TLS, tlsAD(e.ID), t); err != nil {
			return nil, nil, fmt.Errorf("endpoint tls: %w", err)
		}
	}
	return auth, t, nil
}

func (s *Store) openJSON(sealed, ad string, dst any) error {
	plain, err := s.box.Open(sealed, ad)
	if err != nil {
		return err
	}
	return json.Unmarshal([]byte(plain), dst)
}

func (s *Store) sealJSON(v any, ad string) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode credentials: %v", err)) // strings and string slices always encode
	}
	return s.box.SealBytes(b, ad)
}

// setEndpointAuth validates in, the endpoint's new auth (nil or zero:
// none), and writes it into e sealed, with its info in clear. A client
// secret left out keeps the one stored, so that scopes or an audience can
// change without sending the secret again. The token URL's destination is
// checked with check when it is not nil.
func (s *Store) setEndpointAuth(ctx context.Context, e *WebhookEndpoint, in *EndpointAuth, check URLChecker) ([]FieldError, error) {
	if in == nil || in.Type == "" && in.TokenURL == "" && in.ClientID == "" && in.ClientSecret == "" && len(in.Scopes) == 0 && in.Audience == "" {
		e.Auth, e.AuthInfo = "", EndpointAuthInfo{}
		return nil, nil
	}
	a := *in
	a.Scopes = slices.Clone(a.Scopes)
	if a.ClientSecret == "" && e.Auth != "" {
		var old EndpointAuth
		if err := s.openJSON(e.Auth, authAD(e.ID), &old); err != nil {
			return nil, fmt.Errorf("open endpoint auth: %w", err)
		}
		a.ClientSecret = old.ClientSecret
	}
	var errs []FieldError
	bad := func(field, msg string) { errs = append(errs, FieldError{Field: "auth." + field, Message: msg}) }
	if a.Type != AuthOAuth2ClientCredentials {
		bad("type", fmt.Sprintf("must be %q", AuthOAuth2ClientCredentials))
	}
	tokenURLOK := false
	switch {
	case a.TokenURL == "":
		bad("token_url", "is required")
	case len(a.TokenURL) > MaxURLBytes:
		bad("token_url", tooLong(MaxURLBytes, len(a.TokenURL)))
	default:
		if err := CheckURLCharacters(a.TokenURL); err != nil {
			bad("token_url", err.Error())
		} else if msg := tokenURLScheme(a.TokenURL); msg != "" {
			bad("token_url", msg)
		} else {
			tokenURLOK = true
		}
	}
	checkText := func(field, v string, maxBytes int, required bool) {
		switch {
		case v == "" && required:
			bad(field, "is required")
		case len(v) > maxBytes:
			bad(field, tooLong(maxBytes, len(v)))
		case !httpguts.ValidHeaderFieldValue(v) || strings.ContainsRune(v, '\t'):
			bad(field, "must not contain control characters")
		}
	}
	checkText("client_id", a.ClientID, MaxClientIDBytes, true)
	checkText("client_secret", a.ClientSecret, MaxClientSecretBytes, true)
	checkText("audience", a.Audience, MaxAudienceBytes, false)
	if a.ClientSecret == HeaderMask {
		bad("client_secret", fmt.Sprintf("is %q, the mask that answers show instead of the secret: send the real secret, or leave client_secret out to keep the stored one", HeaderMask))
	}
	if len(a.Scopes) > MaxScopes {
		bad("scopes", fmt.Sprintf("at most %d scopes, got %d", MaxScopes, len(a.Scopes)))
	}
	for i, sc := range a.Scopes {
		if sc == "" || len(sc) > MaxScopeBytes || strings.ContainsFunc(sc, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r > '~' }) {
			bad(fmt.Sprintf("scopes[%d]", i), fmt.Sprintf("must be 1 to %d printable ASCII characters other than space, '\"' and '\\' (RFC 6749 §3.3)", MaxScopeBytes))
		}
	}
	if len(errs) > 0 {
		return errs, nil
	}
	if check != nil && tokenURLOK {
		if err := check(ctx, a.TokenURL); err != nil {
			var appErr *Error
			if errors.As(err, &appErr) && appErr.Kind == KindInvalidURL {
				return []FieldError{{Field: "auth.token_url", Message: appErr.Message}}, nil
			}
			return nil, err
		}
	}
	if a.Scopes == nil {
		a.Scopes = []string{}
	}
	e.Auth = s.sealJSON(a, authAD(e.ID))
	e.AuthInfo = EndpointAuthInfo{Type: a.Type, TokenURL: a.TokenURL, ClientID: a.ClientID, Scopes: a.Scopes, Audience: a.Audience}
	return nil, nil
}

// tokenURLScheme refuses a token URL that is not https: the client secret
// travels in it. Plain http is accepted only to a loopback host, which
// the egress guard refuses unless the server's operator allowed loopback
// addresses (a developer's machine, tests).
func tokenURLScheme(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "must be an absolute https URL"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
		if ip := net.ParseIP(h); h == "localhost" || strings.HasSuffix(h, ".localhost") || ip != nil && ip.IsLoopback() {
			return ""
		}
	}
	return "must be an https URL: the client secret is sent to it (plain http only to a loopback host)"
}

// setEndpointTLS validates in, the endpoint's new TLS material (nil or
// zero: none), and writes it into e sealed, with its info in clear. A
// client key left out beside a client certificate keeps the stored key
// (a certificate renewed on the same key).
func (s *Store) setEndpointTLS(e *WebhookEndpoint, in *EndpointTLS) ([]FieldError, error) {
	if in == nil || *in == (EndpointTLS{}) {
		e.TLS, e.TLSInfo = "", EndpointTLSInfo{}
		return nil, nil
	}
	t := *in
	if t.ClientKey == "" && t.ClientCertificate != "" && e.TLS != "" {
		var old EndpointTLS
		if err := s.openJSON(e.TLS, tlsAD(e.ID), &old); err != nil {
			return nil, fmt.Errorf("open endpoint tls: %w", err)
		}
		t.ClientKey = old.ClientKey
	}
	info, errs := CheckEndpointTLS(t)
	if len(errs) > 0 {
		return errs, nil
	}
	e.TLS = s.sealJSON(t, tlsAD(e.ID))
	e.TLSInfo = info
	return nil, nil
}

// setEndpointCredentials applies in's auth and tls, those it sets, to e.
func (s *Store) setEndpointCredentials(ctx context.Context, e *WebhookEndpoint, in EndpointInput, check URLChecker) ([]FieldError, error) {
	var errs []FieldError
	if in.Auth != nil {
		ferrs, err := s.setEndpointAuth(ctx, e, in.Auth, check)
		if err != nil {
			return nil, err
		}
		errs = append(errs, ferrs...)
	}
	if in.TLS != nil {
		ferrs, err := s.setEndpointTLS(e, in.TLS)
		if err != nil {
			return nil, err
		}
		errs = append(errs, ferrs...)
	}
	errs = append(errs, brokerCredentialErrors(e)...)
	return append(errs, checkCredentialHeaders(e)...), nil
}

// checkCredentialHeaders refuses a custom Authorization header beside
// auth, which sends its own.
func checkCredentialHeaders(e *WebhookEndpoint) []FieldError {
	if e.AuthInfo.Set() && slices.Contains(e.HeaderNames, "Authorization") {
		return []FieldError{{Field: "headers.Authorization", Message: "cannot be a custom header of an endpoint with auth: the access token goes in Authorization"}}
	}
	return nil
}
