package activities

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

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
