package activities

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/recordhub/recordhub/activities/authtest"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// natsURL is an endpoint URL publishing to subject on the test NATS
// server, with a login the server (which asks for none) ignores.
func natsURL(t *testing.T, subject, userinfo string) string {
	t.Helper()
	u, err := url.Parse(storetest.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	return "nats://" + userinfo + u.Host + "/" + subject
}

// TestAttemptPublishesToJetStream: every event type reaches the stream
// capturing the subject its endpoint's URL makes, once, with the body byte
// for byte, Nats-Msg-Id the event id and the HTTP request's signature
// headers, which the Standard Webhooks library verifies; the row shows the
// PubAck, and nothing shows the password.
func TestAttemptPublishesToJetStream(t *testing.T) {
	const password = "pw-4c1d-never-shown"
	s := newNATSStream(t)
	s.create(t)
	var logs syncBuffer
	f := newFixture(t, storetest.Open(t, models.SQLite), natsURL(t, s.subject+".{module}.{event_type}", "app:"+password+"@"))
	events := eventsOfEveryType(t, f)
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback, Logger: jsonLogger(&logs)})
	t.Cleanup(d.brokers.closeAll)
	for _, ev := range events {
		in := AttemptInput{TenantID: f.tenantID, EventID: ev.ID, EndpointID: f.endpoint.ID}
		if _, err := d.Attempt(t.Context(), in); err != nil {
			t.Fatalf("Attempt %s: %v", ev.Type, err)
		}
	}
	msgs := s.messages(t)
	if len(msgs) != len(events) {
		t.Fatalf("stream holds %d messages, want %d", len(msgs), len(events))
	}
	for i, m := range msgs {
		ev := events[i]
		module := "orders"
		switch {
		case ev.Type == models.EventEndpointDisabled:
			module = models.NoModule
		case ev.ID == f.event.ID:
			module = "contacts"
		}
		if want := s.subject + "." + module + "." + ev.Type; m.Subject != want {
			t.Errorf("subject %q, want %q", m.Subject, want)
		}
		if string(m.Data) != ev.Payload {
			t.Errorf("%s: body %s, want the stored payload", ev.Type, m.Data)
		}
		h := headerOf(m.Header)
		if !verifyStandard(h, m.Data, f.secret) || !verifyHex(h.Get("x-webhook-signature"), m.Data, f.secret) {
			t.Errorf("%s: signatures %q, %q do not verify", ev.Type, h.Get("webhook-signature"), h.Get("x-webhook-signature"))
		}
		if got := m.Header.Get("Nats-Msg-Id"); got != ev.ID {
			t.Errorf("%s: Nats-Msg-Id %q, want %s", ev.Type, got, ev.ID)
		}
		if got := m.Header.Get("content-type"); got != "application/json" {
			t.Errorf("%s: content-type %q", ev.Type, got)
		}
	}

	rows := f.rows(t)
	var ack struct {
		Stream string `json:"stream"`
		Seq    uint64 `json:"seq"`
	}
	if err := json.Unmarshal([]byte(rows[0].ResponseBody), &ack); err != nil || ack.Stream != s.name || ack.Seq != 1 {
		t.Errorf("row's response %q: want the PubAck of %s, sequence 1", rows[0].ResponseBody, s.name)
	}
	if got := rows[0].RequestHeaders[":subject"]; len(got) != 1 || !strings.HasPrefix(got[0], s.subject+".") {
		t.Errorf("row's :subject %v", got)
	}
	ep, err := f.store.GetEndpoint(t.Context(), f.tenantID, f.endpoint.ID)
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	json.NewEncoder(&all).Encode(rows)
	json.NewEncoder(&all).Encode(ep)
	all.WriteString(logs.String())
	if strings.Contains(all.String(), password) {
		t.Errorf("the password shows in a row, the stored endpoint or a log line")
	}
	if !strings.Contains(ep.URL, "app:"+models.URLSecretMask+"@") {
		t.Errorf("stored URL %q, want the password masked", ep.URL)
	}
}

// TestAttemptJetStreamDedupe: the same event published twice (a retry
// after a lost confirmation, a replay) is one message in the stream: the
// server drops the repeat by its Nats-Msg-Id, and the second attempt still
// succeeds, its row saying duplicate.
func TestAttemptJetStreamDedupe(t *testing.T) {
	s := newNATSStream(t)
	s.create(t)
	f := newFixture(t, storetest.Open(t, models.SQLite), natsURL(t, s.subject+".{event_type}", ""))
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	t.Cleanup(d.brokers.closeAll)
	for range 2 {
		if _, err := d.Attempt(t.Context(), f.input()); err != nil {
			t.Fatalf("Attempt: %v", err)
		}
	}
	if n := len(s.messages(t)); n != 1 {
		t.Errorf("stream holds %d messages, want 1", n)
	}
	rows := f.rows(t)
	if len(rows) != 2 || !strings.Contains(rows[1].ResponseBody, `"duplicate":true`) {
		t.Errorf("rows %+v: want two, the second a duplicate", rows)
	}
}

// TestAttemptJetStreamNoStream: a subject no stream captures fails the
// attempt, retryably, as unroutable, naming the subject; once a stream
// captures it, the next attempt gets through.
func TestAttemptJetStreamNoStream(t *testing.T) {
	s := newNATSStream(t)
	f := newFixture(t, storetest.Open(t, models.SQLite), natsURL(t, s.subject+".{event_type}", ""))
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	t.Cleanup(d.brokers.closeAll)
	if _, err := d.Attempt(t.Context(), f.input()); err == nil || !isRetryable(err) {
		t.Fatalf("Attempt: %v, want a retryable failure", err)
	}
	row := f.onlyRow(t)
	if row.Error != models.DeliveryErrUnroutable || !strings.Contains(row.ErrorMessage, s.subject+".record_created") {
		t.Errorf("row error %q %q, want unroutable naming the subject", row.Error, row.ErrorMessage)
	}
	s.create(t)
	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("Attempt once the stream exists: %v", err)
	}
	if n := len(s.messages(t)); n != 1 {
		t.Errorf("stream holds %d messages, want 1", n)
	}
}

// TestAttemptNATSDown: a server that refuses connections fails the
// attempt at once, retryably.
func TestAttemptNATSDown(t *testing.T) {
	f := newFixture(t, storetest.Open(t, models.SQLite), "nats://127.0.0.1:1/records")
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	t.Cleanup(d.brokers.closeAll)
	if _, err := d.Attempt(t.Context(), f.input()); err == nil || !isRetryable(err) {
		t.Fatalf("Attempt: %v, want a retryable failure", err)
	}
	if row := f.onlyRow(t); row.Error != models.DeliveryErrConnectionRefused {
		t.Errorf("row error %q %q, want connection_refused", row.Error, row.ErrorMessage)
	}
}

// TestAttemptJetStreamMutualTLS: a NATS server of the test's own that
// speaks only TLS, with a certificate from a private CA, and requires a
// client certificate from another: the endpoint's tls material gets the
// message through (the server's certificate checked against the endpoint's
// CA bundle, the client's presented); without a client certificate, or
// with another CA bundle, the attempt fails as tls and nothing is
// published.
func TestAttemptJetStreamMutualTLS(t *testing.T) {
	const bin = "/usr/sbin/nats-server"
	if _, err := exec.LookPath(bin); err != nil {
		if storetest.Required() {
			t.Fatalf("nats-server is required but not found: %v", err)
		}
		t.Skipf("%s not found (%v); install nats-server", bin, err)
	}
	serverCA, clientCA, otherCA := authtest.NewCA(t, "broker CA"), authtest.NewCA(t, "client CA"), authtest.NewCA(t, "other CA")
	serverCert, serverKey, _ := serverCA.Issue(t, "127.0.0.1", true)
	clientCert, clientKey, clientPair := clientCA.Issue(t, "recordhub acme", false)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	srv := exec.Command(bin, "-a", "127.0.0.1", "-p", port, "-js", "-sd", filepath.Join(dir, "js"),
		"--tls", "--tlscert", file("server.pem", serverCert), "--tlskey", file("server.key", serverKey),
		"--tlsverify", "--tlscacert", file("clients.pem", clientCA.PEM))
	if err := srv.Start(); err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })

	// The test's own client, with a certificate of the client CA, makes
	// the stream and reads it.
	nc, err := nats.Connect("tls://127.0.0.1:"+port, nats.Secure(&tls.Config{
		RootCAs: serverCA.Pool(), Certificates: []tls.Certificate{clientPair}, MinVersion: tls.VersionTLS12,
	}), nats.RetryOnFailedConnect(true), nats.MaxReconnects(100), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("connect to the TLS server: %v", err)
	}
	t.Cleanup(nc.Close)
	storetest.Eventually(t, 30*time.Second, "the test's client connected", nc.IsConnected)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s := &natsStream{js: js, name: "RECORDHUB_TLS", subject: "recordhub-tls"}
	s.create(t)

	f := newFixture(t, storetest.Open(t, models.SQLite), "nats://127.0.0.1:"+port+"/"+s.subject+".{event_type}")
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	t.Cleanup(d.brokers.closeAll)
	for _, c := range []struct {
		name    string
		tls     models.EndpointTLS
		wantErr string
	}{
		{"no client certificate", models.EndpointTLS{CACertificates: serverCA.PEM}, models.DeliveryErrTLS},
		{"another CA bundle", models.EndpointTLS{ClientCertificate: clientCert, ClientKey: clientKey, CACertificates: otherCA.PEM}, models.DeliveryErrTLS},
		{"certificate and the broker's CA", models.EndpointTLS{ClientCertificate: clientCert, ClientKey: clientKey, CACertificates: serverCA.PEM}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint.ID, models.EndpointInput{TLS: &c.tls}, nil); err != nil {
				t.Fatal(err)
			}
			out, err := d.Attempt(t.Context(), f.input())
			if out.Error != c.wantErr || (err == nil) != (c.wantErr == "") {
				rows := f.rows(t)
				t.Fatalf("attempt: error code %q (%v), want %q; row %+v", out.Error, err, c.wantErr, rows[len(rows)-1])
			}
		})
	}
	if n := len(s.messages(t)); n != 1 {
		t.Errorf("stream holds %d messages, want the one sent with the endpoint's certificate", n)
	}
}
