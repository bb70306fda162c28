package main

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/activities/authtest"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestWebhooksWithCredentials: through the whole service, an endpoint
// whose receiver is on a private CA, requires a client certificate from
// another CA of its own and an access token from its authorization server
// (zitadel/oidc's provider) gets its events with both; its secrets are in
// no answer and no log line of the service.
func TestWebhooksWithCredentials(t *testing.T) {
	cfg := webhookConfig(t, models.SQLite)
	var logs syncBuffer
	base, _ := startServiceLogging(t, cfg, io.Discard, &logs)
	key := cfg.BootstrapAdminKey

	as := authtest.NewServer(t, time.Now, 5*time.Minute)
	serverCA, clientCA := authtest.NewCA(t, "receiver CA"), authtest.NewCA(t, "client CA")
	_, _, serverPair := serverCA.Issue(t, "127.0.0.1", true)
	clientCert, clientKey, _ := clientCA.Issue(t, "recordhub", false)
	var (
		mu      sync.Mutex
		granted []string // the client certificate of each request with a valid token
	)
	recv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, err := as.Verify(r.Context(), tok, time.Now()); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		granted = append(granted, r.TLS.PeerCertificates[0].Subject.CommonName)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	recv.TLS = &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA.Pool()}
	recv.Config.ErrorLog = log.New(io.Discard, "", 0)
	recv.StartTLS()
	t.Cleanup(recv.Close)

	mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
		"fields": []any{map[string]any{"name": "title", "type": "string"}}})
	_, created := call(t, "POST", base+"/api/admin/webhook-endpoints", key, mustJSON(t, map[string]any{
		"url": recv.URL + "/hook", "events": []string{models.EventRecordCreated},
		"auth": map[string]any{"type": "oauth2_client_credentials", "token_url": as.TokenURL(), "client_id": as.ClientID, "client_secret": as.Secret},
		"tls":  map[string]any{"client_certificate": clientCert, "client_key": clientKey, "ca_certificates": serverCA.PEM},
	}))
	if created["id"] == nil {
		t.Fatalf("create the endpoint: %v", created)
	}
	for range 3 {
		jsonCall(t, "POST", base+"/api/modules/"+mod["id"].(string)+"/records", key, map[string]any{"fields": map[string]any{"title": "a"}})
	}
	storetest.Eventually(t, 30*time.Second, "three deliveries with a token and the client certificate", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(granted) >= 3
	})
	mu.Lock()
	for _, cn := range granted {
		if cn != "recordhub" {
			t.Errorf("a request came with client certificate %q", cn)
		}
	}
	mu.Unlock()
	if n := as.Requests.Load(); n != 1 {
		t.Errorf("%d token requests for 3 deliveries, want 1", n)
	}
	if !strings.Contains(logs.String(), "embedded Temporal server") {
		t.Errorf("the service's log was not captured: %q", logs.String())
	}
	keyBody := strings.Split(strings.TrimSpace(clientKey), "\n")[1]
	_, got := call(t, "GET", base+"/api/admin/webhook-endpoints/"+created["id"].(string), key, "")
	for what, text := range map[string]string{"the endpoint's answer": mustJSON(t, got), "the create answer": mustJSON(t, created), "the service's log": logs.String()} {
		if strings.Contains(text, as.Secret) || strings.Contains(text, keyBody) {
			t.Errorf("%s holds a secret", what)
		}
	}
}
