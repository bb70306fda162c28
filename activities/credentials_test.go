package activities

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/activities/authtest"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestAttemptMutualTLS: a receiver on its own CA that requires a client
// certificate from another CA of its own gets the event when the endpoint
// presents its certificate and trusts the receiver's CA; without the
// certificate the handshake is refused, and with another CA bundle the
// receiver is not trusted: both fail with tls and reach no handler. Each
// change of the endpoint's TLS material takes effect at the next attempt;
// the key is in no row and no log line.
func TestAttemptMutualTLS(t *testing.T) {
	serverCA, clientCA, otherCA := authtest.NewCA(t, "receiver CA"), authtest.NewCA(t, "client CA"), authtest.NewCA(t, "other CA")
	_, _, serverPair := serverCA.Issue(t, "127.0.0.1", true)
	clientCert, clientKey, _ := clientCA.Issue(t, "recordhub acme", false)
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)

	var (
		mu    sync.Mutex
		peers []string
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers = append(peers, r.TLS.PeerCertificates[0].Subject.CommonName)
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)

	db := storetest.NewDB(t, models.SQLite)
	f := newFixture(t, db.Open(t, models.Options{}), srv.URL+"/hook")
	var logs syncBuffer
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, Logger: jsonLogger(&logs)})
	setTLS := func(m models.EndpointTLS) {
		t.Helper()
		if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{TLS: &m}, nil); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		name    string
		tls     models.EndpointTLS
		wantErr string
	}{
		{"certificate and the receiver's CA", models.EndpointTLS{ClientCertificate: clientCert, ClientKey: clientKey, CACertificates: serverCA.PEM}, ""},
		{"no certificate", models.EndpointTLS{CACertificates: serverCA.PEM}, models.DeliveryErrTLS},
		{"another CA bundle", models.EndpointTLS{ClientCertificate: clientCert, ClientKey: clientKey, CACertificates: otherCA.PEM}, models.DeliveryErrTLS},
		{"certificate and the receiver's CA again", models.EndpointTLS{ClientCertificate: clientCert, ClientKey: clientKey, CACertificates: serverCA.PEM}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			setTLS(c.tls)
			mu.Lock()
			before := len(peers)
			mu.Unlock()
			out, err := d.Attempt(t.Context(), f.input())
			if got := out.Error; got != c.wantErr || (err == nil) != (c.wantErr == "") {
				t.Fatalf("attempt: error code %q (%v), want %q", got, err, c.wantErr)
			}
			mu.Lock()
			got := peers[before:]
			mu.Unlock()
			switch {
			case c.wantErr == "" && (len(got) != 1 || got[0] != "recordhub acme"):
				t.Errorf("the receiver saw client certificates %q, want the endpoint's", got)
			case c.wantErr != "" && len(got) != 0:
				t.Errorf("the receiver's handler ran for a refused handshake")
			}
			if c.wantErr != "" {
				row := f.rows(t)[len(f.rows(t))-1]
				if !strings.HasPrefix(row.ErrorMessage, "TLS handshake failed") {
					t.Errorf("row's message %q", row.ErrorMessage)
				}
			}
		})
	}
	keyBody := strings.Split(strings.TrimSpace(clientKey), "\n")[1]
	assertNoSecrets(t, db, logs.String(), keyBody)
}

// TestLRU: the per-endpoint cache keeps at most its bound, drops the least
// recently used first, and replaces an endpoint's value when its
// configuration changes; each value that leaves is released once.
func TestLRU(t *testing.T) {
	var dropped []string
	c := newLRU(2, func(v string) { dropped = append(dropped, v) })
	builds := 0
	get := func(id, key string) string {
		t.Helper()
		v, err := c.get(id, key, func() (string, error) { builds++; return id + "/" + key, nil })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	get("a", "1")
	get("b", "1")
	if v := get("a", "1"); v != "a/1" || builds != 2 {
		t.Fatalf("a again: %q after %d builds, want the cached a/1 after 2", v, builds)
	}
	get("c", "1") // b is the least recently used
	if v := get("a", "2"); v != "a/2" {
		t.Fatalf("a with another configuration: %q", v)
	}
	if diff := cmp.Diff(dropped, []string{"b/1", "a/1"}); diff != "" {
		t.Errorf("released (-got +want):\n%s", diff)
	}
	if len(c.items) != 2 || c.order.Len() != 2 {
		t.Errorf("%d items, %d in order; want 2", len(c.items), c.order.Len())
	}
}
