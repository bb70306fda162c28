package activities

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestAttemptPublishesToRabbitMQ: every event type reaches a queue bound
// to the routing key its endpoint's URL makes, once, persistent, with the
// body byte for byte, the event id as message id and the HTTP request's
// signature headers, which the Standard Webhooks library verifies; the
// row shows the message and the confirmation, the password masked.
func TestAttemptPublishesToRabbitMQ(t *testing.T) {
	r := newRabbit(t)
	r.bind(t, "contacts.*")
	r.bind(t, "orders.*")
	r.bind(t, models.NoModule+".*")
	f := newFixture(t, storetest.Open(t, models.SQLite), r.url(t, "{module}.{event_type}"))
	events := eventsOfEveryType(t, f)
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	t.Cleanup(d.brokers.closeAll)

	routingKeys := map[string]string{}
	for _, ev := range events {
		in := AttemptInput{TenantID: f.tenantID, EventID: ev.ID, EndpointID: f.endpoint.ID}
		if _, err := d.Attempt(t.Context(), in); err != nil {
			t.Fatalf("Attempt %s: %v", ev.Type, err)
		}
		msgs := r.messages(t)
		if len(msgs) != 1 {
			t.Fatalf("%s: queue got %d messages, want 1", ev.Type, len(msgs))
		}
		m := msgs[0]
		routingKeys[ev.Type] = m.RoutingKey
		if string(m.Body) != ev.Payload {
			t.Errorf("%s: body %s, want the stored payload %s", ev.Type, m.Body, ev.Payload)
		}
		h := headerOf(stringTable(m.Headers))
		if !verifyStandard(h, m.Body, f.secret) {
			t.Errorf("%s: webhook-signature %q does not verify", ev.Type, h.Get("webhook-signature"))
		}
		if !verifyHex(h.Get("x-webhook-signature"), m.Body, f.secret) {
			t.Errorf("%s: x-webhook-signature %q does not verify", ev.Type, h.Get("x-webhook-signature"))
		}
		if verifyStandard(h, m.Body, "whsec_"+strings.Repeat("A", 43)+"=") {
			t.Errorf("%s: a wrong secret verifies", ev.Type)
		}
		if m.MessageId != ev.ID || m.DeliveryMode != amqp.Persistent || m.ContentType != "application/json" || m.Type != ev.Type || h.Get("webhook-id") != ev.ID {
			t.Errorf("%s: message id %q, delivery mode %d, content type %q, type %q, webhook-id %q; want %s, 2, application/json, the type, the id",
				ev.Type, m.MessageId, m.DeliveryMode, m.ContentType, m.Type, h.Get("webhook-id"), ev.ID)
		}
	}
	want := map[string]string{
		models.EventRecordCreated: "orders.record_created", models.EventRecordUpdated: "orders.record_updated",
		models.EventStatusChange: "orders.status_change", models.EventCustomDataUpdated: "orders.custom_data_updated",
		models.EventRecordDeleted: "orders.record_deleted", models.EventEndpointDisabled: "_.endpoint_disabled",
	}
	// The fixture's own record_created is the contacts module's.
	if got := routingKeys[models.EventRecordCreated]; got == "contacts.record_created" {
		want[models.EventRecordCreated] = got
	}
	if diff := cmp.Diff(routingKeys, want); diff != "" {
		t.Errorf("routing keys (-got +want):\n%s", diff)
	}

	rows := f.rows(t)
	if len(rows) != len(events) {
		t.Fatalf("got %d rows, want %d", len(rows), len(events))
	}
	row := rows[0]
	if !row.Succeeded || row.Error != "" || row.ResponseStatus != nil || !strings.Contains(row.ResponseBody, `"delivery_tag"`) {
		t.Errorf("row: succeeded %v, error %q, status %v, response %q; want a success with the confirmation", row.Succeeded, row.Error, row.ResponseStatus, row.ResponseBody)
	}
	if row.RequestURL != f.endpoint.URL || strings.Contains(row.RequestURL, ":guest@") || !strings.Contains(row.RequestURL, ":"+models.URLSecretMask+"@") {
		t.Errorf("row's URL %q: want the endpoint's, password masked", row.RequestURL)
	}
	for _, k := range []string{":exchange", ":routing_key", ":delivery_mode", ":message_id", ":mandatory", ":content_type", "webhook-id", "webhook-signature"} {
		if len(row.RequestHeaders[k]) != 1 {
			t.Errorf("row's request headers lack %s: %v", k, row.RequestHeaders)
		}
	}
	if row.RemoteIP != "127.0.0.1" {
		t.Errorf("row's remote ip %q, want 127.0.0.1", row.RemoteIP)
	}
}

// stringTable keeps an AMQP table's string values.
func stringTable(t amqp.Table) map[string]string {
	out := map[string]string{}
	for k, v := range t {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// TestAttemptRabbitMQUnroutable: a message no queue takes (returned, as it
// is published mandatory) and an exchange that does not exist fail the
// attempt, retryably, with unroutable and the broker's reason; the
// connection stays usable for the next attempt.
func TestAttemptRabbitMQUnroutable(t *testing.T) {
	r := newRabbit(t)
	for _, tc := range []struct {
		name, url, message string
	}{
		{"no queue bound", r.url(t, "nobody.{event_type}"), `no queue is bound to exchange "` + r.exchange + `" with routing key "nobody.record_created"`},
		{"no exchange", strings.Replace(r.url(t, "x"), r.exchange, r.exchange+"-missing", 1), "404 NOT_FOUND - no exchange"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, storetest.Open(t, models.SQLite), tc.url)
			d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
			t.Cleanup(d.brokers.closeAll)
			for range 2 {
				_, err := d.Attempt(t.Context(), f.input())
				if err == nil || !isRetryable(err) {
					t.Fatalf("Attempt: %v, want a retryable failure", err)
				}
			}
			for _, row := range f.rows(t) {
				if row.Succeeded || row.Error != models.DeliveryErrUnroutable || !strings.Contains(row.ErrorMessage, tc.message) {
					t.Errorf("row: succeeded %v, error %q %q; want unroutable, %q", row.Succeeded, row.Error, row.ErrorMessage, tc.message)
				}
			}
		})
	}
}

// TestAttemptRabbitMQDown: a broker that refuses connections fails the
// attempt at once, retryably; a broker host that is loopback without the
// allow list is blocked, not retried.
func TestAttemptRabbitMQDown(t *testing.T) {
	f := newFixture(t, storetest.Open(t, models.SQLite), "amqp://guest:guest@127.0.0.1:1/?routing_key=x")
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	t.Cleanup(d.brokers.closeAll)
	if _, err := d.Attempt(t.Context(), f.input()); err == nil || !isRetryable(err) {
		t.Fatalf("Attempt: %v, want a retryable failure", err)
	}
	if row := f.onlyRow(t); row.Error != models.DeliveryErrConnectionRefused {
		t.Errorf("row error %q %q, want connection_refused", row.Error, row.ErrorMessage)
	}

	g := newFixture(t, storetest.Open(t, models.SQLite), "amqp://guest:guest@127.0.0.1:5672/?routing_key=x")
	blocked := newDeliverer(t, g.store, Config{})
	if _, err := blocked.Attempt(t.Context(), g.input()); err == nil || isRetryable(err) {
		t.Fatalf("Attempt to loopback without the allow list: %v, want a failure not retried", err)
	}
	if row := g.onlyRow(t); row.Error != models.DeliveryErrBlockedDestination {
		t.Errorf("row error %q %q, want blocked_destination", row.Error, row.ErrorMessage)
	}
}

// TestAttemptRabbitMQGoneAndBack: the broker goes away (every connection
// broken, new ones refused) and comes back: the attempt made meanwhile
// fails at once as connection_refused, retryably, and the next one dials
// again and is confirmed; a broker that went and came back between two
// attempts costs none. The broker is reached through a proxy the test
// stops and starts, so the shared RabbitMQ keeps running.
func TestAttemptRabbitMQGoneAndBack(t *testing.T) {
	r := newRabbit(t)
	r.bind(t, "#")
	u, err := url.Parse(storetest.RabbitMQURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := storetest.NewTCPProxy(t, u.Host)
	u.Host = proxy.Addr()
	u.RawQuery = "exchange=" + r.exchange + "&routing_key={event_type}"
	f := newFixture(t, storetest.Open(t, models.SQLite), u.String())
	d := newDeliverer(t, f.store, Config{AllowCIDRs: loopback})
	t.Cleanup(d.brokers.closeAll)

	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	proxy.Stop()
	if _, err := d.Attempt(t.Context(), f.input()); err == nil || !isRetryable(err) {
		t.Fatalf("attempt while the broker is away: %v, want a retryable failure", err)
	}
	proxy.Start()
	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("attempt once the broker is back: %v", err)
	}
	// Gone and back between two attempts: the pooled connection is dead,
	// and the attempt dials again rather than fail.
	proxy.Stop()
	proxy.Start()
	if _, err := d.Attempt(t.Context(), f.input()); err != nil {
		t.Fatalf("attempt after the broker bounced: %v", err)
	}
	var codes []string
	for _, row := range f.rows(t) {
		codes = append(codes, row.Error)
	}
	if diff := cmp.Diff(codes, []string{"", models.DeliveryErrConnectionRefused, "", ""}); diff != "" {
		t.Errorf("rows' errors (-got +want):\n%s", diff)
	}
	if n := len(r.messages(t)); n != 3 {
		t.Errorf("queue got %d messages, want 3", n)
	}
}
