package models_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestEndpointThrottle: a throttle is stored, validated within its bounds,
// left alone by an update that does not name it, cleared by a nil value,
// and counted by CountThrottledEndpoints.
func TestEndpointThrottle(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		s := storetest.NewDB(t, d).Open(t, models.Options{})
		tenantID, _ := newTenant(t, s)
		u, events := "https://hooks.example.com/a", []string{models.EventRecordCreated}
		ep, _, err := s.CreateEndpoint(ctx, tenantID, models.EndpointInput{
			URL: &u, Events: &events,
			RateLimitPerSecond: models.OptionalInt{Set: true, Value: ptr(20)},
		}, allowURL)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(models.Throttle{PerSecond: 20}, ep.Throttle()); diff != "" {
			t.Errorf("created throttle (-want +got):\n%s", diff)
		}
		if n, err := s.CountThrottledEndpoints(ctx); err != nil || n != 1 {
			t.Errorf("CountThrottledEndpoints = %d, %v; want 1", n, err)
		}
		desc := "renamed"
		ep, err = s.UpdateEndpoint(ctx, tenantID, ep.ID, models.EndpointInput{Description: &desc, MaxInFlight: models.OptionalInt{Set: true, Value: ptr(3)}}, allowURL)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(models.Throttle{PerSecond: 20, MaxInFlight: 3}, ep.Throttle()); diff != "" {
			t.Errorf("after setting max_in_flight (-want +got):\n%s", diff)
		}
		for _, tc := range []struct {
			in    models.EndpointInput
			field string
		}{
			{models.EndpointInput{RateLimitPerSecond: models.OptionalInt{Set: true, Value: ptr(0)}}, "rate_limit.per_second"},
			{models.EndpointInput{RateLimitPerSecond: models.OptionalInt{Set: true, Value: ptr(10001)}}, "rate_limit.per_second"},
			{models.EndpointInput{MaxInFlight: models.OptionalInt{Set: true, Value: ptr(0)}}, "max_in_flight"},
			{models.EndpointInput{MaxInFlight: models.OptionalInt{Set: true, Value: ptr(1001)}}, "max_in_flight"},
		} {
			_, err := s.UpdateEndpoint(ctx, tenantID, ep.ID, tc.in, allowURL)
			if diff := cmp.Diff([]string{tc.field}, errorFields(t, err)); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
		}
		ep, err = s.UpdateEndpoint(ctx, tenantID, ep.ID, models.EndpointInput{
			RateLimitPerSecond: models.OptionalInt{Set: true}, MaxInFlight: models.OptionalInt{Set: true},
		}, allowURL)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetEndpoint(ctx, tenantID, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Throttle().Limited() || got.RateLimitPerSecond != nil || got.MaxInFlight != nil {
			t.Errorf("cleared throttle reads %+v", got.Throttle())
		}
		if n, err := s.CountThrottledEndpoints(ctx); err != nil || n != 0 {
			t.Errorf("CountThrottledEndpoints = %d, %v; want 0", n, err)
		}
	})
}
