package models_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestEndpointURLSecret: a broker URL's password is sealed and the URL
// kept masked; EndpointURL gives it back in clear; a URL sent back masked
// keeps it for the same destination only; a URL without a login drops it.
func TestEndpointURLSecret(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		s := storetest.Open(t, d)
		ctx := t.Context()
		tenantID, _ := newTenant(t, s)
		const pw = "hunter2-d3adbeef"
		raw := "amqp://app:" + pw + "@rabbit.example.com/orders?exchange=records&routing_key={module}.{event_type}"
		e, _, err := s.CreateEndpoint(ctx, tenantID, models.EndpointInput{URL: ptr(raw), Events: &[]string{models.EventRecordCreated}}, allowURL)
		if err != nil {
			t.Fatal(err)
		}
		masked := "amqp://app:****@rabbit.example.com/orders?exchange=records&routing_key={module}.{event_type}"
		stored, err := s.GetEndpoint(ctx, tenantID, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.URL != masked {
			t.Errorf("stored URL %q, want %q", stored.URL, masked)
		}
		all, _ := json.Marshal(stored)
		if strings.Contains(string(all), pw) {
			t.Error("the password is stored in clear")
		}
		if got, err := s.EndpointURL(stored); err != nil || got != raw {
			t.Errorf("EndpointURL = %q, %v; want %q", got, err, raw)
		}

		// Sent back as answered: kept.
		up, err := s.UpdateEndpoint(ctx, tenantID, e.ID, models.EndpointInput{URL: ptr(strings.Replace(masked, "routing_key=", "routing_key=x.", 1))}, allowURL)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := s.EndpointURL(up); got != strings.Replace(raw, "routing_key=", "routing_key=x.", 1) {
			t.Errorf("after a masked update, EndpointURL = %q", got)
		}
		// The mask toward another host: refused, the password never goes there.
		_, err = s.UpdateEndpoint(ctx, tenantID, e.ID, models.EndpointInput{URL: ptr(strings.Replace(masked, "rabbit.example.com", "evil.example.com", 1))}, allowURL)
		if kindOf(err) != models.KindInvalidURL || !strings.Contains(err.Error(), "mask") {
			t.Errorf("masked URL to another host: %v, want invalid_url naming the mask", err)
		}
		// No login: none kept.
		up, err = s.UpdateEndpoint(ctx, tenantID, e.ID, models.EndpointInput{URL: ptr("nats://nats.example.com/records")}, allowURL)
		if err != nil {
			t.Fatal(err)
		}
		if up.URLSecret != "" {
			t.Error("a URL without a login kept the sealed password")
		}
		// A NATS token is the secret, whole.
		up, err = s.UpdateEndpoint(ctx, tenantID, e.ID, models.EndpointInput{URL: ptr("nats://tok3n-s3cret@nats.example.com/records")}, allowURL)
		if err != nil {
			t.Fatal(err)
		}
		if up.URL != "nats://****@nats.example.com/records" {
			t.Errorf("token URL stored as %q", up.URL)
		}
		// A mask with no password stored: refused at creation.
		_, _, err = s.CreateEndpoint(ctx, tenantID, models.EndpointInput{URL: ptr(masked), Events: &[]string{models.EventRecordCreated}}, allowURL)
		if kindOf(err) != models.KindInvalidURL {
			t.Errorf("create with the mask: %v, want invalid_url", err)
		}
	})
}

// TestEndpointBrokerCredentials: OAuth2 auth cannot go with a broker URL,
// nor TLS material with plain-text amqp.
func TestEndpointBrokerCredentials(t *testing.T) {
	s := storetest.Open(t, models.SQLite)
	tenantID, _ := newTenant(t, s)
	_, _, err := s.CreateEndpoint(t.Context(), tenantID, models.EndpointInput{
		URL: ptr("nats://nats.example.com/records"), Events: &[]string{models.EventRecordCreated},
		Auth: &models.EndpointAuth{Type: models.AuthOAuth2ClientCredentials, TokenURL: "https://auth.example.com/token", ClientID: "c", ClientSecret: "s"},
	}, allowURL)
	if got := errorFields(t, err); len(got) != 1 || got[0] != "auth" {
		t.Errorf("auth on a nats URL: %v (fields %v), want a validation error on auth", err, got)
	}
}
