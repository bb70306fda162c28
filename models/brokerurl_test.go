package models_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

func TestParseBrokerURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want models.BrokerURL
	}{
		{"amqp://app:p%40ss@rabbit.example.com/orders?exchange=records&routing_key={module}.{event_type}", models.BrokerURL{
			Kind: models.DestinationAMQP, Host: "rabbit.example.com", Port: 5672, User: "app", Password: "p@ss", HasPassword: true,
			VHost: "orders", Exchange: "records", RoutingKey: "{module}.{event_type}",
		}},
		{"amqps://rabbit.example.com:5999/%2F?routing_key=%7Bevent_type%7D", models.BrokerURL{
			Kind: models.DestinationAMQP, TLS: true, Host: "rabbit.example.com", Port: 5999, VHost: "/", RoutingKey: "{event_type}",
		}},
		{"amqp://rabbit.example.com?routing_key=", models.BrokerURL{Kind: models.DestinationAMQP, Host: "rabbit.example.com", Port: 5672, VHost: "/"}},
		{"nats://s3cr3t@nats.example.com/records.{module}.{event_type}", models.BrokerURL{
			Kind: models.DestinationNATS, Host: "nats.example.com", Port: 4222, User: "s3cr3t", Subject: "records.{module}.{event_type}",
		}},
		{"nats://[2001:db8::1]:4223/a", models.BrokerURL{Kind: models.DestinationNATS, Host: "2001:db8::1", Port: 4223, Subject: "a"}},
	} {
		got, err := models.ParseBrokerURL(tc.url)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if diff := cmp.Diff(*got, tc.want); diff != "" {
			t.Errorf("%s (-got +want):\n%s", tc.url, diff)
		}
	}
}

func TestParseBrokerURLRefuses(t *testing.T) {
	for _, tc := range []struct{ url, says string }{
		{"amqp://h/?exchange=x", "needs routing_key"},
		{"amqp://h/?routing_key={module}.{record}", `unknown placeholder "{record}"`},
		{"amqp://h/?routing_key={module", "never closed"},
		{"amqp://h/?routing_key=a}", "closes no placeholder"},
		{"amqp://h/?routing_key=a&heartbeat=5", `unknown parameter "heartbeat"`},
		{"amqp://h/?routing_key=a&routing_key=b", "given 2 times"},
		{"amqp://h/a/b?routing_key=a", "one segment"},
		{"amqp://h/?routing_key=a&exchange=bad%20name", "not an exchange name"},
		{"amqp://h/?routing_key=" + strings.Repeat("k", 250) + "{module}", "more than AMQP's 255"},
		{"amqp://h:99999/?routing_key=a", "out of range"},
		{"amqp://h/?routing_key=a#frag", "no fragment"},
		{"nats://h", "path is the JetStream subject"},
		{"nats://h/a..b", "empty token"},
		{"nats://h/a.*", "wildcard"},
		{"nats://h/a.>", "wildcard"},
		{"nats://h/a?x=1", "takes no query"},
		{"nats://h/{nope}", `unknown placeholder "{nope}"`},
		{"nats://@h/a", "user information is empty"},
		{"amqp:///?routing_key=a", "with a host"},
	} {
		_, err := models.ParseBrokerURL(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v, want one saying %q", tc.url, err, tc.says)
		}
	}
}

func TestBrokerURLTarget(t *testing.T) {
	b, err := models.ParseBrokerURL("nats://h/records.{module}.{event_type}")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ typ, module, want string }{
		{models.EventRecordCreated, "orders", "records.orders.record_created"},
		{models.EventEndpointDisabled, "", "records._.endpoint_disabled"},
	} {
		if got := b.Target(tc.typ, tc.module); got != tc.want {
			t.Errorf("Target(%s, %q) = %q, want %q", tc.typ, tc.module, got, tc.want)
		}
	}
}

func TestCheckURLCharactersBraces(t *testing.T) {
	if err := models.CheckURLCharacters("nats://h/records.{module}.{event_type}"); err != nil {
		t.Errorf("a broker URL's placeholders refused: %v", err)
	}
	if err := models.CheckURLCharacters("https://h/{module}"); err == nil {
		t.Error("braces accepted in an https URL")
	}
}
