package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
)

// Event types: the five record events and the operational event
// endpoint_disabled.
const (
	EventRecordCreated     = "record_created"
	EventRecordUpdated     = "record_updated"
	EventRecordDeleted     = "record_deleted"
	EventStatusChange      = "status_change"
	EventCustomDataUpdated = "custom_data_updated"
	// EventEndpointDisabled: an endpoint of the tenant was disabled. It
	// belongs to no module, and is never sent to the endpoint it is about.
	EventEndpointDisabled = "endpoint_disabled"
)

// EventTypes lists every event type, the types an endpoint may subscribe to.
var EventTypes = []string{EventRecordCreated, EventRecordUpdated, EventRecordDeleted, EventStatusChange, EventCustomDataUpdated, EventEndpointDisabled, EventRecordSnapshot}

// Webhook endpoint bounds.
const (
	DefaultRetryMax = 5
	// MaxRetryMax: beyond 5 attempts every delay is the 960 s cap, so 100
	// attempts span about 26 hours.
	MaxRetryMax    = 100
	PrefixEndpoint = "whe_"
	PrefixEvent    = "evt_"
	PrefixDelivery = "whd_"
	// PrefixWebhookSecret starts every endpoint signing secret, as Standard
	// Webhooks' "whsec_" form has it.
	PrefixWebhookSecret = "whsec_"
)

// WebhookEndpoint is an outbound subscription. Its signing secrets are
// stored sealed; Secret and PreviousSecret are sealed text, see
// Store.EndpointSecrets for the plaintext.
type WebhookEndpoint struct {
	ID                      string `gorm:"primaryKey"`
	TenantID                string
	URL                     string `gorm:"column:url"`
	Description             string
	Events                  StringList `gorm:"type:text"`
	ModuleIDs               StringList `gorm:"type:text;column:module_ids"`
	RetryMax                int
	Enabled                 bool
	Secret                  string
	PreviousSecret          *string
	PreviousSecretExpiresAt *time.Time
	CreatedAt               time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt               time.Time `gorm:"autoUpdateTime:false"`

	// Health, written once per delivery that ends; see
	// RecordDeliveryEnd. FirstFailureAt is the first failed delivery since
	// the last success.
	ConsecutiveFailures int
	FirstFailureAt      *time.Time
	LastSuccessAt       *time.Time
	LastFailureAt       *time.Time
	DisabledAt          *time.Time
	DisabledReason      *string

	// Headers is the sealed JSON object of the endpoint's custom headers,
	// "" when it has none (see Store.EndpointHeaders); HeaderNames are
	// their names, in clear, for answers that mask the values.
	Headers     string
	HeaderNames StringList `gorm:"type:text"`
	// Filter is the endpoint's content filter (see EndpointFilter); the
	// dispatcher starts no delivery of an event whose record fails it.
	Filter EndpointFilter `gorm:"type:text;column:event_filter"`
	// Ordering is OrderingNone or OrderingRecord: whether the endpoint
	// receives each record's events in the order of its versions.
	Ordering string
	// Auth and TLS are the sealed JSON of the endpoint's OAuth2 client
	// credentials and TLS material, "" when none (see
	// Store.EndpointCredentials); AuthInfo and TLSInfo what answers show.
	Auth     string
	AuthInfo EndpointAuthInfo `gorm:"type:text;column:auth_info"`
	TLS      string           `gorm:"column:tls"`
	TLSInfo  EndpointTLSInfo  `gorm:"type:text;column:tls_info"`
	// URLSecret is the sealed password (or NATS token) of a broker URL,
	// whose URL holds URLSecretMask in its place; "" when none (see
	// Store.EndpointURL).
	URLSecret string `gorm:"column:url_secret"`
	// RateLimitPerSecond and MaxInFlight are the endpoint's throttle: at
	// most this many requests in any second, and at once, across every
	// worker; nil is no limit (see Throttle).
	RateLimitPerSecond *int
	MaxInFlight        *int
}

// An endpoint's orderings.
const (
	// OrderingNone: every delivery runs as soon as it is dispatched.
	OrderingNone = "none"
	// OrderingRecord: one record's events reach the endpoint in the order
	// of the record's versions, through one sequencer per (endpoint,
	// record); a failing delivery holds back only that record's later
	// events, until it succeeds or is given up.
	OrderingRecord = "record"
)

// Orderings lists the values of an endpoint's ordering.
var Orderings = []string{OrderingNone, OrderingRecord}

// Ordered reports whether the endpoint receives each record's events in
// version order.
func (e *WebhookEndpoint) Ordered() bool { return e.Ordering == OrderingRecord }

// Reasons an endpoint was disabled (disabled_reason).
const (
	// DisabledGone: its receiver answered 410 Gone.
	DisabledGone = "gone"
	// DisabledFailing: its deliveries failed for the disable window.
	DisabledFailing = "failing"
	// DisabledManual: a PATCH set enabled to false.
	DisabledManual = "manual"
)

// Health states of an endpoint.
const (
	HealthHealthy  = "healthy"
	HealthFailing  = "failing"
	HealthDisabled = "disabled"
)

// DisableAfterFailures is the least number of failed deliveries in a row
// that can disable an endpoint.
const DisableAfterFailures = 5

// HealthState is "disabled" for a disabled endpoint, "failing" when its
// last delivery ended without success, else "healthy".
func (e *WebhookEndpoint) HealthState() string {
	switch {
	case !e.Enabled:
		return HealthDisabled
	case e.ConsecutiveFailures > 0:
		return HealthFailing
	}
	return HealthHealthy
}

// Subscribes reports whether the endpoint wants an event of type t on
// module, enabled or not: while it is disabled, the events it wants are
// recorded as skipped instead of delivered. Module filters do not apply to
// endpoint_disabled, which belongs to no module.
func (e *WebhookEndpoint) Subscribes(t, moduleID string) bool {
	return slices.Contains(e.Events, t) && (t == EventEndpointDisabled || len(e.ModuleIDs) == 0 || slices.Contains(e.ModuleIDs, moduleID))
}

// EndpointInput holds an endpoint's settable attributes; nil members are
// left unchanged on update.
type EndpointInput struct {
	URL         *string
	Description *string
	Events      *[]string
	ModuleIDs   *[]string
	RetryMax    *int
	Enabled     *bool
	// Secret, when set on create, replaces the generated one.
	Secret *string
	// Headers, when set, replaces the whole set of custom headers; an
	// empty map removes them all.
	Headers *map[string]string
	// Filter, when set, replaces the content filter; empty removes it.
	Filter *map[string]any
	// Ordering, when set, is OrderingNone or OrderingRecord.
	Ordering *string
	// Auth and TLS, when set, replace the endpoint's credentials; a zero
	// value removes them (see setEndpointAuth, setEndpointTLS).
	Auth *EndpointAuth
	TLS  *EndpointTLS
	// RateLimitPerSecond and MaxInFlight, when Set, replace the throttle's
	// member; a Set with a nil Value removes it.
	RateLimitPerSecond OptionalInt
	MaxInFlight        OptionalInt
}

// URLChecker refuses destinations that resolve to blocked addresses; it
// is the egress guard of activities, injected so that models does not dial.
type URLChecker func(ctx context.Context, rawURL string) error

// validateEndpoint checks an endpoint's settings, and its URL (its
// characters, then check) when check is not nil.
func (s *Store) validateEndpoint(ctx context.Context, tenantID string, e *WebhookEndpoint, check URLChecker) ([]FieldError, error) {
	var errs []FieldError
	if len(e.Description) > MaxDescriptionBytes {
		errs = append(errs, FieldError{Field: "description", Message: tooLong(MaxDescriptionBytes, len(e.Description))})
	}
	if len(e.Events) == 0 {
		errs = append(errs, FieldError{Field: "events", Message: "subscribe to at least one event type"})
	}
	for _, t := range e.Events {
		if !slices.Contains(EventTypes, t) {
			errs = append(errs, FieldError{Field: "events", Message: fmt.Sprintf("unknown event type %q; use one of %v", t, EventTypes)})
		}
	}
	if !slices.Contains(Orderings, e.Ordering) {
		errs = append(errs, FieldError{Field: "ordering", Message: fmt.Sprintf("must be one of %q", Orderings)})
	}
	errs = append(errs, validateThrottle(e)...)
	if e.RetryMax < 1 || e.RetryMax > MaxRetryMax {
		errs = append(errs, FieldError{Field: "retry_max", Message: fmt.Sprintf("must be between 1 and %d", MaxRetryMax)})
	}
	if len(e.ModuleIDs) > 0 {
		var found []string
		if err := s.r.WithContext(ctx).Model(&Module{}).Where("tenant_id = ? AND id IN ?", tenantID, []string(e.ModuleIDs)).Pluck("id", &found).Error; err != nil {
			return nil, fmt.Errorf("check modules: %w", err)
		}
		for _, id := range e.ModuleIDs {
			if !slices.Contains(found, id) {
				errs = append(errs, FieldError{Field: "module_ids", Message: fmt.Sprintf("no such module %q", id)})
			}
		}
	}
	if len(errs) > 0 || check == nil {
		return errs, nil
	}
	if len(e.URL) > MaxURLBytes {
		return nil, Errorf(KindInvalidURL, "url %s", tooLong(MaxURLBytes, len(e.URL)))
	}
	if err := CheckURLCharacters(e.URL); err != nil {
		return nil, err
	}
	if err := check(ctx, e.URL); err != nil {
		return nil, err
	}
	return nil, nil
}

// CreateEndpoint creates an endpoint after checking its URL with check, and
// returns it with its secret in clear.
func (s *Store) CreateEndpoint(ctx context.Context, tenantID string, in EndpointInput, check URLChecker) (*WebhookEndpoint, string, error) {
	now := s.now()
	e := &WebhookEndpoint{ID: NewID(PrefixEndpoint), TenantID: tenantID, RetryMax: DefaultRetryMax, Enabled: true, Events: StringList{}, ModuleIDs: StringList{}, HeaderNames: StringList{}, Ordering: OrderingNone, CreatedAt: now, UpdatedAt: now}
	applyEndpointInput(e, in)
	if in.URL != nil {
		if err := s.setEndpointURL(e, *in.URL, nil); err != nil {
			return nil, "", err
		}
	}
	secret := NewWebhookSecret()
	if in.Secret != nil {
		secret = *in.Secret
		if _, ok := decodeWebhookSecret(secret); !ok {
			return nil, "", ValidationError([]FieldError{{Field: "secret", Message: WebhookSecretRule}})
		}
	}
	var headerErrs []FieldError
	if in.Headers != nil {
		headerErrs = s.setEndpointHeaders(e, *in.Headers)
	}
	credErrs, err := s.setEndpointCredentials(ctx, e, in, check)
	if err != nil {
		return nil, "", err
	}
	headerErrs = append(headerErrs, credErrs...)
	ferrs, err := s.validateFilter(ctx, tenantID, e)
	if err != nil {
		return nil, "", err
	}
	if len(ferrs) > 0 {
		check = nil // the URL is checked once the rest is valid
	}
	errs, err := s.validateEndpoint(ctx, tenantID, e, check)
	if err != nil {
		return nil, "", err
	}
	errs = append(errs, headerErrs...)
	errs = append(errs, ferrs...)
	if len(errs) > 0 {
		return nil, "", ValidationError(errs)
	}
	e.Secret = s.box.Seal(secret, "webhook-secret:"+e.ID)
	err = s.write(ctx, func(tx *gorm.DB) error {
		if s.dialect == Postgres {
			// Concurrent creations of one tenant's endpoints count one
			// after another.
			if err := tx.Exec("SELECT id FROM tenants WHERE id = ? FOR UPDATE", tenantID).Error; err != nil {
				return err
			}
		}
		var n int64
		if err := tx.Model(&WebhookEndpoint{}).Where("tenant_id = ?", tenantID).Count(&n).Error; err != nil {
			return err
		}
		if n >= int64(s.maxEndpoints) {
			return Errorf(KindConflict, "the tenant has %d webhook endpoints, the most it may have (RECORDHUB_MAX_ENDPOINTS_PER_TENANT); delete one, or subscribe an existing endpoint to more events and modules", n)
		}
		return tx.Create(e).Error
	})
	if err != nil {
		var appErr *Error
		if errors.As(err, &appErr) {
			return nil, "", appErr
		}
		return nil, "", fmt.Errorf("insert endpoint: %w", err)
	}
	return e, secret, nil
}

// DefaultMaxEndpointsPerTenant is a tenant's webhook endpoints at most,
// unless the store's options say otherwise.
const DefaultMaxEndpointsPerTenant = 100

func applyEndpointInput(e *WebhookEndpoint, in EndpointInput) {
	if in.URL != nil {
		e.URL = *in.URL
	}
	if in.Description != nil {
		e.Description = *in.Description
	}
	if in.Events != nil {
		e.Events = slices.Compact(slices.Sorted(slices.Values(*in.Events)))
	}
	if in.ModuleIDs != nil {
		e.ModuleIDs = slices.Compact(slices.Sorted(slices.Values(*in.ModuleIDs)))
	}
	if in.RetryMax != nil {
		e.RetryMax = *in.RetryMax
	}
	if in.Enabled != nil {
		e.Enabled = *in.Enabled
	}
	if in.Filter != nil {
		e.Filter = EndpointFilter(*in.Filter)
	}
	if in.Ordering != nil {
		e.Ordering = *in.Ordering
	}
	if in.RateLimitPerSecond.Set {
		e.RateLimitPerSecond = in.RateLimitPerSecond.Value
	}
	if in.MaxInFlight.Set {
		e.MaxInFlight = in.MaxInFlight.Value
	}
}

// GetEndpoint returns one of the tenant's endpoints.
func (s *Store) GetEndpoint(ctx context.Context, tenantID, id string) (*WebhookEndpoint, error) {
	var e WebhookEndpoint
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenantID, id).Take(&e).Error; err != nil {
		return nil, notFoundOr(err, "load endpoint")
	}
	return &e, nil
}

// ListEndpoints returns a page of the tenant's endpoints, newest first.
func (s *Store) ListEndpoints(ctx context.Context, tenantID string, p Page) ([]WebhookEndpoint, int64, error) {
	var (
		out   []WebhookEndpoint
		total int64
	)
	q := s.r.WithContext(ctx).Model(&WebhookEndpoint{}).Where("tenant_id = ?", tenantID)
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count endpoints: %w", err)
	}
	if err := q.Order("created_at DESC, id DESC").Limit(p.Limit).Offset(p.Offset()).Find(&out).Error; err != nil {
		return nil, 0, fmt.Errorf("list endpoints: %w", err)
	}
	return out, total, nil
}

// UpdateEndpoint changes an endpoint. Only a URL the change sets is checked:
// the stored one passed at its time, every attempt checks again when it
// dials, and an endpoint whose destination has since become refused must
// still be switchable off.
func (s *Store) UpdateEndpoint(ctx context.Context, tenantID, id string, in EndpointInput, check URLChecker) (*WebhookEndpoint, error) {
	e, err := s.GetEndpoint(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	credCheck := check // a token URL the change sets is checked whatever the URL
	if in.URL == nil {
		check = nil
	}
	if in.Secret != nil {
		return nil, ValidationError([]FieldError{{Field: "secret", Message: "use rotate-secret to change the secret"}})
	}
	wasEnabled := e.Enabled
	stored := *e
	applyEndpointInput(e, in)
	if in.URL != nil {
		if err := s.setEndpointURL(e, *in.URL, &stored); err != nil {
			return nil, err
		}
	}
	var headerErrs []FieldError
	if in.Headers != nil {
		headerErrs = s.setEndpointHeaders(e, *in.Headers)
	}
	credErrs, err := s.setEndpointCredentials(ctx, e, in, credCheck)
	if err != nil {
		return nil, err
	}
	headerErrs = append(headerErrs, credErrs...)
	// The filter is checked when the change sets it or the modules it is
	// checked against: a module whose fields changed since must not keep
	// its endpoints from being switched off.
	var ferrs []FieldError
	if in.Filter != nil || in.ModuleIDs != nil {
		if ferrs, err = s.validateFilter(ctx, tenantID, e); err != nil {
			return nil, err
		}
		if len(ferrs) > 0 {
			check = nil
		}
	}
	errs, err := s.validateEndpoint(ctx, tenantID, e, check)
	if err != nil {
		return nil, err
	}
	errs = append(errs, headerErrs...)
	errs = append(errs, ferrs...)
	if len(errs) > 0 {
		return nil, ValidationError(errs)
	}
	now := s.now()
	u := map[string]any{
		"url": e.URL, "description": e.Description, "events": e.Events, "module_ids": e.ModuleIDs,
		"retry_max": e.RetryMax, "enabled": e.Enabled, "ordering": e.Ordering, "updated_at": now,
		"rate_limit_per_second": e.RateLimitPerSecond, "max_in_flight": e.MaxInFlight,
	}
	if in.Headers != nil {
		u["headers"], u["header_names"] = e.Headers, e.HeaderNames
	}
	if in.Auth != nil {
		u["auth"], u["auth_info"] = e.Auth, e.AuthInfo
	}
	if in.TLS != nil {
		u["tls"], u["tls_info"] = e.TLS, e.TLSInfo
	}
	if in.Filter != nil || in.ModuleIDs != nil {
		u["event_filter"] = e.Filter
	}
	if in.URL != nil {
		u["url_secret"] = e.URLSecret
	}
	// Only a change of enabled touches health: re-enabling starts afresh
	// (a new failure window), disabling by hand is recorded as manual and
	// announced (endpoint_disabled) in the same transaction.
	if e.Enabled && !wasEnabled {
		u["disabled_at"], u["disabled_reason"], u["consecutive_failures"], u["first_failure_at"] = nil, nil, 0, nil
	}
	var (
		out      WebhookEndpoint
		disabled bool
	)
	err = s.write(ctx, func(tx *gorm.DB) error {
		if !e.Enabled && wasEnabled {
			var err error
			if disabled, err = s.disableEndpointTx(tx, tenantID, id, DisabledManual, now, "", nil, u); err != nil {
				return err
			}
			// Not disabled here: another writer disabled it first (and
			// announced it), or deleted it. The other changes still apply.
		}
		if !disabled {
			res := tx.Model(&WebhookEndpoint{}).Where("tenant_id = ? AND id = ?", tenantID, id).Updates(u)
			if res.Error != nil {
				return fmt.Errorf("update endpoint: %w", res.Error)
			}
			if res.RowsAffected == 0 {
				return ErrNotFound
			}
		}
		return tx.Where("tenant_id = ? AND id = ?", tenantID, id).Take(&out).Error
	})
	if err != nil {
		return nil, err
	}
	if disabled {
		s.eventsWritten()
	}
	return &out, nil
}

// DisableEndpoint disables an endpoint at once, as its receiver asked by
// answering 410 Gone, and writes its endpoint_disabled event in
// the same transaction. Disabling a disabled endpoint is harmless and
// changes nothing (its disabled_at and reason stay those of the first
// disable, and no event is written); a deleted one is ErrNotFound.
func (s *Store) DisableEndpoint(ctx context.Context, tenantID, id string) error {
	now := s.now()
	var disabled bool
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		if disabled, err = s.disableEndpointTx(tx, tenantID, id, DisabledGone, now, "", nil, map[string]any{"updated_at": now}); err != nil || disabled {
			return err
		}
		var n int64
		if err := tx.Model(&WebhookEndpoint{}).Where("tenant_id = ? AND id = ?", tenantID, id).Count(&n).Error; err != nil {
			return fmt.Errorf("find endpoint: %w", err)
		}
		if n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return err
	}
	if disabled {
		s.eventsWritten()
	}
	return nil
}

// RecordDeliveryEnd updates an endpoint's health when one of its
// deliveries ends, at now: one UPDATE by primary key. A success resets the
// failure count and window; a failure counts, and when disableAfter is
// above zero it disables the endpoint (reason "failing") once at least
// DisableAfterFailures deliveries in a row have failed over at least
// disableAfter: a second, conditional UPDATE in the same transaction, which
// also writes the endpoint_disabled event when it changed the row. A
// deleted endpoint is no error.
func (s *Store) RecordDeliveryEnd(ctx context.Context, tenantID, id string, succeeded bool, now time.Time, disableAfter time.Duration) error {
	var disabled bool
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		disabled, err = s.recordDeliveryEnd(tx, tenantID, id, DeliveryEnd{Succeeded: succeeded, At: now, DisableAfter: disableAfter})
		return err
	})
	if err != nil {
		return fmt.Errorf("record endpoint health: %w", err)
	}
	if disabled {
		s.eventsWritten()
	}
	return nil
}

// recordDeliveryEnd is RecordDeliveryEnd in tx; disabled reports that it
// disabled the endpoint (and wrote its endpoint_disabled event).
func (s *Store) recordDeliveryEnd(tx *gorm.DB, tenantID, id string, end DeliveryEnd) (disabled bool, err error) {
	// As the store's clock: what the databases keep, so that an
	// endpoint_disabled event's occurred_at is its disabled_at.
	now := end.At.UTC().Truncate(time.Microsecond)
	u := map[string]any{"consecutive_failures": 0, "first_failure_at": nil, "last_success_at": now}
	if !end.Succeeded {
		u = map[string]any{
			"consecutive_failures": gorm.Expr("consecutive_failures + 1"),
			"first_failure_at":     gorm.Expr("COALESCE(first_failure_at, ?)", now),
			"last_failure_at":      now,
		}
	}
	if err := tx.Model(&WebhookEndpoint{}).Where("tenant_id = ? AND id = ?", tenantID, id).Updates(u).Error; err != nil {
		return false, err
	}
	if end.Succeeded || end.DisableAfter <= 0 {
		return false, nil
	}
	// On the counted row: first_failure_at is now when this was the
	// first failure, so a positive window is not over yet.
	return s.disableEndpointTx(tx, tenantID, id, DisabledFailing, now,
		"consecutive_failures >= ? AND first_failure_at <= ?", []any{DisableAfterFailures, now.Add(-end.DisableAfter)}, nil)
}

// CountEndpointsByHealth returns how many endpoints, of all tenants, are in
// each health state; a state with none is absent.
func (s *Store) CountEndpointsByHealth(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		State string
		N     int64
	}
	err := s.r.WithContext(ctx).Model(&WebhookEndpoint{}).
		Select("CASE WHEN NOT enabled THEN '" + HealthDisabled + "' WHEN consecutive_failures > 0 THEN '" + HealthFailing + "' ELSE '" + HealthHealthy + "' END AS state, COUNT(*) AS n").
		Group("state").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count endpoints by health: %w", err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// DeleteEndpoint deletes an endpoint; deliveries in flight stop at their
// next attempt, and its delivery history stays.
func (s *Store) DeleteEndpoint(ctx context.Context, tenantID, id string) error {
	res := s.writer(ctx).Where("tenant_id = ? AND id = ?", tenantID, id).Delete(&WebhookEndpoint{})
	if res.Error != nil {
		return fmt.Errorf("delete endpoint: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// EndpointSecrets returns the endpoint's signing secrets in clear: the
// current one, and the previous one while its rotation grace lasts.
func (s *Store) EndpointSecrets(e *WebhookEndpoint) (current string, previous string, err error) {
	current, err = s.box.Open(e.Secret, "webhook-secret:"+e.ID)
	if err != nil {
		return "", "", fmt.Errorf("endpoint secret: %w", err)
	}
	if e.PreviousSecret != nil && e.PreviousSecretExpiresAt != nil && s.now().Before(*e.PreviousSecretExpiresAt) {
		if previous, err = s.box.Open(*e.PreviousSecret, "webhook-secret:"+e.ID); err != nil {
			return "", "", fmt.Errorf("endpoint previous secret: %w", err)
		}
	}
	return current, previous, nil
}

// RotateEndpointSecret gives an endpoint a new secret; the old one keeps
// signing alongside it for grace seconds. It returns the new secret.
func (s *Store) RotateEndpointSecret(ctx context.Context, tenantID, id string, grace int) (*WebhookEndpoint, string, error) {
	if grace < 0 || grace > MaxGraceSeconds {
		return nil, "", ValidationError([]FieldError{{Field: "grace_seconds", Message: fmt.Sprintf("must be between 0 and %d", MaxGraceSeconds)}})
	}
	secret := NewWebhookSecret()
	var out WebhookEndpoint
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("tenant_id = ? AND id = ?", tenantID, id).Take(&out).Error; err != nil {
			return notFoundOr(err, "load endpoint")
		}
		now := s.now()
		u := map[string]any{"secret": s.box.Seal(secret, "webhook-secret:"+id), "previous_secret": nil, "previous_secret_expires_at": nil, "updated_at": now}
		if grace > 0 {
			exp := now.Add(time.Duration(grace) * time.Second)
			u["previous_secret"], u["previous_secret_expires_at"] = out.Secret, exp
		}
		if err := tx.Model(&WebhookEndpoint{}).Where("id = ?", id).Updates(u).Error; err != nil {
			return fmt.Errorf("rotate secret: %w", err)
		}
		return tx.Where("id = ?", id).Take(&out).Error
	})
	if err != nil {
		return nil, "", err
	}
	return &out, secret, nil
}
