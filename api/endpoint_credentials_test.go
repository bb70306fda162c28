package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestWebhookEndpointCredentials: an endpoint's OAuth2 client credentials
// and TLS material are taken on create and PATCH, validated (https token
// URL through the egress check, PEM that parses, a key that matches its
// certificate), and answered with the secrets masked and the
// certificates described (subject, expiry); a PATCH without the secret or
// the key keeps the stored one; null removes them. Neither the client
// secret nor the key is in any answer or any column of the endpoint.
func TestWebhookEndpointCredentials(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		store := db.Open(t, models.Options{})
		e := newEnvOn(t, store)
		const secret = "cs-7d1f0a2b-oauth-secret"
		ca, other := newTestCert(t, "receiver CA", nil), newTestCert(t, "other CA", nil)
		client := newTestCert(t, "recordhub acme", ca)
		keyBody := strings.Split(strings.TrimSpace(client.keyPEM), "\n")[1]
		secretish := func(what string, body []byte) {
			t.Helper()
			if s := string(body); strings.Contains(s, secret) || strings.Contains(s, keyBody) {
				t.Errorf("%s holds a secret: %s", what, s)
			}
		}
		auth := map[string]any{
			"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/oauth/token",
			"client_id": "recordhub", "client_secret": secret, "scopes": []string{"webhooks:write"}, "audience": "https://hooks.example.com",
		}
		tlsIn := map[string]any{"client_certificate": client.certPEM, "client_key": client.keyPEM, "ca_certificates": ca.certPEM}
		r := e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{
			"url": "https://hooks.example.com/a", "events": []string{"record_created"}, "auth": auth, "tls": tlsIn,
		}).want(201)
		secretish("create", r.body)
		created := r.json()
		wantAuth := map[string]any{
			"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/oauth/token",
			"client_id": "recordhub", "client_secret": models.HeaderMask, "scopes": []any{"webhooks:write"}, "audience": "https://hooks.example.com",
		}
		if diff := cmp.Diff(created["auth"], any(wantAuth)); diff != "" {
			t.Errorf("create auth (-got +want):\n%s", diff)
		}
		gotTLS, _ := created["tls"].(map[string]any)
		cert, _ := gotTLS["client_certificate"].(map[string]any)
		cas, _ := gotTLS["ca_certificates"].([]any)
		if cert["subject"] != "CN=recordhub acme" || cert["issuer"] != "CN=receiver CA" || cert["not_after"] != client.cert.NotAfter.UTC().Format(time.RFC3339) ||
			gotTLS["client_key"] != models.HeaderMask || len(cas) != 1 || cas[0].(map[string]any)["subject"] != "CN=receiver CA" {
			t.Errorf("create tls: %v", created["tls"])
		}
		path := "/api/admin/webhook-endpoints/" + created["id"].(string)
		for _, p := range []string{path, "/api/admin/webhook-endpoints"} {
			r := e.call("GET", p, e.admin, nil).want(200)
			secretish("GET "+p, r.body)
			got := r.json()
			if data, ok := got["data"].([]any); ok {
				got = data[0].(map[string]any)
			}
			if diff := cmp.Diff(got["auth"], any(wantAuth)); diff != "" {
				t.Errorf("GET %s auth (-got +want):\n%s", p, diff)
			}
		}

		// Without client_secret or client_key: the stored ones stay.
		renewed := newTestCert(t, "recordhub acme", ca, client)
		r = e.call("PATCH", path, e.admin, map[string]any{
			"auth": map[string]any{"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/oauth/token", "client_id": "recordhub", "scopes": []string{"a", "b"}},
			"tls":  map[string]any{"client_certificate": renewed.certPEM, "ca_certificates": ca.certPEM},
		}).want(200)
		secretish("PATCH", r.body)
		ep, err := store.GetEndpoint(t.Context(), e.tenantID, created["id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		a, tm, err := store.EndpointCredentials(ep)
		if err != nil || a.ClientSecret != secret || a.Audience != "" || !cmp.Equal(a.Scopes, []string{"a", "b"}) || tm.ClientKey != client.keyPEM || tm.ClientCertificate != renewed.certPEM {
			t.Errorf("after PATCH: auth %+v, tls key kept %v, cert renewed %v, err %v", a, tm.ClientKey == client.keyPEM, tm.ClientCertificate == renewed.certPEM, err)
		}

		// Refusals, each naming its member.
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"http token URL", map[string]any{"auth": with(auth, "token_url", "http://auth.example.com/token")}, "auth.token_url"},
			{"mask as secret", map[string]any{"auth": with(auth, "client_secret", models.HeaderMask)}, "auth.client_secret"},
			{"unknown type", map[string]any{"auth": with(auth, "type", "basic")}, "auth.type"},
			{"scope with a space", map[string]any{"auth": with(auth, "scopes", []string{"a b"})}, "auth.scopes[0]"},
			{"key of another certificate", map[string]any{"tls": with(tlsIn, "client_key", other.keyPEM)}, "tls.client_key"},
			{"certificate not PEM", map[string]any{"tls": with(tlsIn, "client_certificate", "not a certificate")}, "tls.client_certificate"},
			{"a key as CA bundle", map[string]any{"tls": with(tlsIn, "ca_certificates", client.keyPEM)}, "tls.ca_certificates"},
			{"certificate without key", map[string]any{"tls": map[string]any{"client_certificate": other.certPEM}}, "tls.client_key"},
			{"unknown member", map[string]any{"auth": with(auth, "password", "x")}, "auth"},
			{"custom Authorization beside auth", map[string]any{"headers": map[string]string{"Authorization": "Bearer x"}}, "headers.Authorization"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.on(t).call("PATCH", path, e.admin, c.body)
				secretish(c.name, r.body)
				wantDetails(t, r, c.field)
			})
		}
		// The token URL passes the egress check, on create and on PATCH.
		r = e.call("POST", "/api/admin/webhook-endpoints", e.admin, map[string]any{
			"url": "https://hooks.example.com/b", "events": []string{"record_created"}, "auth": with(auth, "token_url", "https://"+blockedHost+"/token"),
		})
		wantDetails(t, r, "auth.token_url")
		wantDetails(t, e.call("PATCH", path, e.admin, map[string]any{"auth": with(auth, "token_url", "https://"+blockedHost+"/token")}), "auth.token_url")

		e.flushLogs()
		for _, table := range []string{"webhook_endpoints", "access_logs"} {
			rows := db.Rows(t, "SELECT * FROM "+table)
			if len(rows) == 0 {
				t.Errorf("no %s rows to look into", table)
			}
			for _, row := range rows {
				for col, v := range row {
					if strings.Contains(v, secret) || strings.Contains(v, keyBody) {
						t.Errorf("%s.%s holds a secret in clear", table, col)
					}
				}
			}
		}

		r = e.call("PATCH", path, e.admin, `{"auth": null, "tls": null}`).want(200)
		if got := r.json(); got["auth"] != nil || got["tls"] != nil {
			t.Errorf("after removing: auth %v, tls %v", got["auth"], got["tls"])
		}
		if a, tm, err := store.EndpointCredentials(mustEndpoint(t, store, e.tenantID, created["id"].(string))); a != nil || tm != nil || err != nil {
			t.Errorf("after removing, the store holds auth %v, tls %v (%v)", a, tm, err)
		}
	})
}
