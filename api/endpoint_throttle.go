package api

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/recordhub/recordhub/models"
)

// rateLimitJSON is an endpoint's rate_limit.
type rateLimitJSON struct {
	PerSecond int `json:"per_second"`
}

func throttleOut(e *models.WebhookEndpoint) (*rateLimitJSON, *int) {
	var rate *rateLimitJSON
	if e.RateLimitPerSecond != nil {
		rate = &rateLimitJSON{PerSecond: *e.RateLimitPerSecond}
	}
	return rate, e.MaxInFlight
}

// throttleIn reads the rate_limit and max_in_flight members of an endpoint
// body: absent leaves each as it is, null removes it, a value replaces it
// ({"per_second": N} for rate_limit, N for max_in_flight); the store checks
// the bounds.
func throttleIn(rateRaw, inFlightRaw json.RawMessage) (rate, inFlight models.OptionalInt, err error) {
	var errs []models.FieldError
	if len(rateRaw) > 0 {
		rate.Set = true
		if !isNull(rateRaw) {
			var v struct {
				PerSecond *int `json:"per_second"`
			}
			if json.Unmarshal(rateRaw, &v) != nil || v.PerSecond == nil {
				errs = append(errs, models.FieldError{Field: "rate_limit", Message: `must be {"per_second": N} with N an integer, or null for no limit`})
			}
			rate.Value = v.PerSecond
		}
	}
	if len(inFlightRaw) > 0 {
		inFlight.Set = true
		if !isNull(inFlightRaw) {
			var n int
			if json.Unmarshal(inFlightRaw, &n) != nil {
				errs = append(errs, models.FieldError{Field: "max_in_flight", Message: "must be an integer, or null for no limit"})
			}
			inFlight.Value = &n
		}
	}
	if len(errs) > 0 {
		return rate, inFlight, models.ValidationError(errs)
	}
	return rate, inFlight, nil
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// throttleHeld refuses, 400 invalid_request, an input that sets a
// throttle where none can be held (Deps.ThrottleUnheld): the request is
// one this deployment does not take. Removing one is always allowed.
func (s *Server) throttleHeld(in models.EndpointInput) error {
	if s.throttleUnheld == "" {
		return nil
	}
	var set []string
	if in.RateLimitPerSecond.Value != nil {
		set = append(set, "rate_limit")
	}
	if in.MaxInFlight.Value != nil {
		set = append(set, "max_in_flight")
	}
	if len(set) > 0 {
		return models.Errorf(models.KindInvalid, "%s: a throttle %s", strings.Join(set, " and "), s.throttleUnheld)
	}
	return nil
}
