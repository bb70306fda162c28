package models

import (
	"context"
	"fmt"
)

// Bounds of an endpoint's throttle.
const (
	MaxRateLimitPerSecond = 10000
	MaxMaxInFlight        = 1000
)

// OptionalInt is a nullable member of an input: Set says the input names
// it, and then a nil Value removes it.
type OptionalInt struct {
	Set   bool
	Value *int
}

// Throttle is an endpoint's throttle; a zero member is no limit.
type Throttle struct {
	// PerSecond: at most this many requests start in any one second.
	PerSecond int
	// MaxInFlight: at most this many requests at once.
	MaxInFlight int
}

// Limited reports whether the throttle limits anything.
func (t Throttle) Limited() bool { return t.PerSecond > 0 || t.MaxInFlight > 0 }

// Throttle returns the endpoint's throttle.
func (e *WebhookEndpoint) Throttle() Throttle {
	var t Throttle
	if e.RateLimitPerSecond != nil {
		t.PerSecond = *e.RateLimitPerSecond
	}
	if e.MaxInFlight != nil {
		t.MaxInFlight = *e.MaxInFlight
	}
	return t
}

func validateThrottle(e *WebhookEndpoint) []FieldError {
	var errs []FieldError
	if v := e.RateLimitPerSecond; v != nil && (*v < 1 || *v > MaxRateLimitPerSecond) {
		errs = append(errs, FieldError{Field: "rate_limit.per_second", Message: fmt.Sprintf("must be between 1 and %d, or rate_limit null for no limit", MaxRateLimitPerSecond)})
	}
	if v := e.MaxInFlight; v != nil && (*v < 1 || *v > MaxMaxInFlight) {
		errs = append(errs, FieldError{Field: "max_in_flight", Message: fmt.Sprintf("must be between 1 and %d, or null for no limit", MaxMaxInFlight)})
	}
	return errs
}

// CountThrottledEndpoints counts the endpoints, of every tenant, that have
// a throttle: a worker that cannot hold one across processes refuses to
// start while there are any.
func (s *Store) CountThrottledEndpoints(ctx context.Context) (int64, error) {
	var n int64
	err := s.r.WithContext(ctx).Model(&WebhookEndpoint{}).
		Where("rate_limit_per_second IS NOT NULL OR max_in_flight IS NOT NULL").Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count throttled endpoints: %w", err)
	}
	return n, nil
}
