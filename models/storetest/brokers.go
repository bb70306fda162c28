package storetest

import (
	"net"
	"net/url"
	"os"
	"testing"
	"time"
)

// RabbitMQURL is the test RabbitMQ (RECORDHUB_TEST_AMQP_URL, else the
// local one with its guest login).
func RabbitMQURL() string {
	if u := os.Getenv("RECORDHUB_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// NATSURL is the test NATS server, with JetStream (RECORDHUB_TEST_NATS_URL,
// else the local one).
func NATSURL() string {
	if u := os.Getenv("RECORDHUB_TEST_NATS_URL"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// RabbitMQ returns the test RabbitMQ's URL; the test is skipped (or
// fails, when Required) if nothing listens there, and skipped by -short.
func RabbitMQ(t testing.TB) string {
	t.Helper()
	return reachable(t, "RabbitMQ", RabbitMQURL(), "RECORDHUB_TEST_AMQP_URL")
}

// NATS returns the test NATS server's URL, as RabbitMQ does.
func NATS(t testing.TB) string {
	t.Helper()
	return reachable(t, "NATS", NATSURL(), "RECORDHUB_TEST_NATS_URL")
}

func reachable(t testing.TB, name, rawURL, env string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s; skipped by -short", name)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse %s url: %v", name, err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		if Required() {
			t.Fatalf("%s is required but unreachable at %s: %v", name, u.Host, err)
		}
		t.Skipf("%s unreachable at %s (%v); set %s or start it", name, u.Host, err, env)
	}
	c.Close()
	return rawURL
}
