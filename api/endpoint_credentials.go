package api

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/recordhub/recordhub/models"
)

// endpointAuthJSON is an endpoint's OAuth2 client credentials as answers
// show them: the client secret masked.
type endpointAuthJSON struct {
	Type         string   `json:"type"`
	TokenURL     string   `json:"token_url"`
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret"`
	Scopes       []string `json:"scopes"`
	Audience     string   `json:"audience"`
}

// endpointTLSJSON describes an endpoint's TLS material: the client
// certificate (null without), its key masked, the CA bundle's certificates.
type endpointTLSJSON struct {
	ClientCertificate *certificateJSON  `json:"client_certificate"`
	ClientKey         *string           `json:"client_key"`
	CACertificates    []certificateJSON `json:"ca_certificates"`
}

type certificateJSON struct {
	Subject   string    `json:"subject"`
	Issuer    string    `json:"issuer"`
	NotBefore time.Time `json:"not_before"`
	NotAfter  time.Time `json:"not_after"`
	SHA256    string    `json:"sha256"`
}

func certificateOut(c models.CertificateInfo) certificateJSON {
	return certificateJSON{Subject: c.Subject, Issuer: c.Issuer, NotBefore: c.NotBefore, NotAfter: c.NotAfter, SHA256: c.SHA256}
}

// credentialsOut is what answers show of an endpoint's auth and TLS
// material; nil for what it has none of.
func credentialsOut(e *models.WebhookEndpoint) (*endpointAuthJSON, *endpointTLSJSON) {
	var (
		auth *endpointAuthJSON
		t    *endpointTLSJSON
	)
	if a := e.AuthInfo; a.Set() {
		auth = &endpointAuthJSON{Type: a.Type, TokenURL: a.TokenURL, ClientID: a.ClientID, ClientSecret: models.HeaderMask, Scopes: a.Scopes, Audience: a.Audience}
		if auth.Scopes == nil {
			auth.Scopes = []string{}
		}
	}
	if i := e.TLSInfo; i.Set() {
		t = &endpointTLSJSON{CACertificates: make([]certificateJSON, 0, len(i.CACertificates))}
		if i.ClientCertificate != nil {
			c, mask := certificateOut(*i.ClientCertificate), models.HeaderMask
			t.ClientCertificate, t.ClientKey = &c, &mask
		}
		for _, c := range i.CACertificates {
			t.CACertificates = append(t.CACertificates, certificateOut(c))
		}
	}
	return auth, t
}

// credentialIn reads the auth or tls member of an endpoint body into dst:
// absent leaves it as it is (false), null removes it (dst left zero), an
// object replaces it; a member it does not know is refused.
func credentialIn(raw json.RawMessage, field, shape string, dst any) (bool, error) {
	if len(raw) == 0 {
		return false, nil
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return true, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return false, models.ValidationError([]models.FieldError{{Field: field, Message: "must be null or an object " + shape}})
	}
	return true, nil
}

const (
	authShape = `{"type": "oauth2_client_credentials", "token_url", "client_id", "client_secret", "scopes": [...], "audience"} of strings`
	tlsShape  = `{"client_certificate", "client_key", "ca_certificates"} of PEM strings`
)

// credentialsIn sets in's Auth and TLS from the body's members.
func credentialsIn(in *models.EndpointInput, rawAuth, rawTLS json.RawMessage) error {
	var a models.EndpointAuth
	if set, err := credentialIn(rawAuth, "auth", authShape, &a); err != nil {
		return err
	} else if set {
		in.Auth = &a
	}
	var t models.EndpointTLS
	if set, err := credentialIn(rawTLS, "tls", tlsShape, &t); err != nil {
		return err
	} else if set {
		in.TLS = &t
	}
	return nil
}
