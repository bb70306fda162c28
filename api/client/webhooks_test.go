package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
)

// TestEndpoints: an admin subscribes an endpoint, lists and reads it with
// stats, changes it, reads its secret and headers, rotates the secret with
// a grace period, and deletes it.
func TestEndpoints(t *testing.T) {
	ctx := context.Background()
	c := newAPI(t)
	m, err := c.CreateModule(ctx, client.ModuleInput{Slug: "notes", Name: "Notes", Fields: []client.Field{{Name: "state", Type: "string"}}})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := c.CreateEndpoint(ctx, client.EndpointInput{
		URL: "https://hooks.example.com/in", Events: []string{"record_created"}, ModuleIDs: []string{m.ID},
		Headers: map[string]string{"X-Api-Key": "s3cret"}, Filter: map[string]any{"state": "open"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ep.Secret, "whsec_") || ep.Health.State != "healthy" || ep.Headers["X-Api-Key"] != "<redacted>" ||
		len(ep.Modules) != 1 || ep.Modules[0].Slug != "notes" || ep.Filter["state"] != "open" || ep.RetryMax == 0 {
		t.Errorf("created %+v, want a secret, health, masked headers, the module named, the filter, the default retry_max", ep)
	}

	page, err := c.ListEndpoints(ctx, client.EndpointListQuery{Page: 1, Limit: 10, Stats: true})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 1 || len(page.Data) != 1 || page.Data[0].Stats == nil || len(page.Data[0].Stats.Hours) != 24 || page.Data[0].Secret != "" {
		t.Errorf("listed %+v, want the endpoint with 24 hours of stats and no secret", page)
	}
	got, err := c.GetEndpoint(ctx, ep.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != ep.ID || got.Stats != nil || len(got.Raw) == 0 {
		t.Errorf("read %+v, want the endpoint without stats, with its answer", got)
	}

	url, events, enabled, headers := "https://hooks.example.com/v2", []string{"record_created", "record_deleted"}, false, map[string]string{}
	up, err := c.UpdateEndpoint(ctx, ep.ID, client.EndpointUpdate{URL: &url, Events: &events, Enabled: &enabled, Headers: &headers})
	if err != nil {
		t.Fatal(err)
	}
	if up.URL != url || !cmp.Equal(up.Events, events) || up.Enabled || len(up.Headers) != 0 || up.Filter["state"] != "open" {
		t.Errorf("changed %+v, want the new url and events, disabled, no headers, the filter kept", up)
	}
	if h, err := c.EndpointHeaders(ctx, ep.ID); err != nil || len(h) != 0 {
		t.Errorf("headers after removing them: %v, %v", h, err)
	}

	rot, err := c.RotateEndpointSecret(ctx, ep.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rot.Secret == ep.Secret || rot.PreviousSecretExpiresAt == nil {
		t.Errorf("rotated %+v, want a new secret and the previous one's expiry", rot)
	}
	sec, err := c.EndpointSecret(ctx, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Secret != rot.Secret || sec.PreviousSecret != ep.Secret || sec.PreviousSecretExpiresAt == nil {
		t.Errorf("secrets %+v, want the new one and, in its grace, the first", sec)
	}

	if err := c.DeleteEndpoint(ctx, ep.ID); err != nil {
		t.Fatal(err)
	}
	var e *client.Error
	if _, err := c.GetEndpoint(ctx, ep.ID, true); !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Errorf("read after delete: %v, want a 404", err)
	}
}

// TestEndpointThrottle: a throttle set on create is answered, a PATCH of
// one member leaves the other, and null removes it.
func TestEndpointThrottle(t *testing.T) {
	ctx := context.Background()
	c := newAPI(t)
	three := 3
	ep, err := c.CreateEndpoint(ctx, client.EndpointInput{
		URL: "https://hooks.example.com/in", Events: []string{"record_created"},
		RateLimit: &client.RateLimit{PerSecond: 20}, MaxInFlight: &three,
	})
	if err != nil {
		t.Fatal(err)
	}
	if ep.RateLimit == nil || ep.RateLimit.PerSecond != 20 || ep.MaxInFlight == nil || *ep.MaxInFlight != 3 {
		t.Errorf("created rate_limit %v, max_in_flight %v; want 20/s and 3", ep.RateLimit, ep.MaxInFlight)
	}
	up, err := c.UpdateEndpoint(ctx, ep.ID, client.EndpointUpdate{RateLimit: &client.Nullable[client.RateLimit]{Null: true}})
	if err != nil {
		t.Fatal(err)
	}
	if up.RateLimit != nil || up.MaxInFlight == nil || *up.MaxInFlight != 3 {
		t.Errorf("after removing rate_limit: %v, %v; want none and 3", up.RateLimit, up.MaxInFlight)
	}
	_, err = c.UpdateEndpoint(ctx, ep.ID, client.EndpointUpdate{MaxInFlight: &client.Nullable[int]{Value: 1001}})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnprocessableEntity {
		t.Errorf("max_in_flight 1001: %v, want 422", err)
	}
}
