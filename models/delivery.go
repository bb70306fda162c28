package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Headers is a set of HTTP headers stored as a JSON object.
type Headers map[string][]string

// Value implements driver.Valuer.
func (h Headers) Value() (driver.Value, error) {
	if h == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string][]string(h))
	if err != nil {
		return nil, fmt.Errorf("encode headers: %w", err)
	}
	return string(b), nil
}

// Scan implements sql.Scanner.
func (h *Headers) Scan(src any) error {
	m := map[string][]string{}
	if err := scanJSON(src, &m); err != nil {
		return err
	}
	*h = m
	return nil
}

// Delivery error codes: what went wrong with an attempt, in one word.
const (
	DeliveryErrTimeout            = "timeout"
	DeliveryErrConnectionRefused  = "connection_refused"
	DeliveryErrDNS                = "dns"
	DeliveryErrTLS                = "tls"
	DeliveryErrBlockedDestination = "blocked_destination"
	DeliveryErrHTTPStatus         = "http_status"
	DeliveryErrEndpointGone       = "endpoint_gone"
	DeliveryErrEndpointDisabled   = "endpoint_disabled"
	DeliveryErrConnection         = "connection"
)

// WebhookDelivery is one attempt to deliver an event to an endpoint.
type WebhookDelivery struct {
	ID              string `gorm:"primaryKey"`
	TenantID        string
	EventID         string
	EventType       string
	EndpointID      string
	WorkflowID      string
	RunID           string
	Attempt         int
	ReplayOf        *string
	RequestURL      string  `gorm:"column:request_url"`
	RequestHeaders  Headers `gorm:"type:text"`
	RequestBody     string
	ResponseStatus  *int
	ResponseHeaders Headers `gorm:"type:text"`
	// ResponseBody holds at most the first 4 KiB.
	ResponseBody string
	Error        string
	ErrorMessage string
	RemoteIP     string   `gorm:"column:remote_ip"`
	DurationMS   float64  `gorm:"column:duration_ms"`
	DNSMS        *float64 `gorm:"column:dns_ms"`
	ConnectMS    *float64 `gorm:"column:connect_ms"`
	TLSMS        *float64 `gorm:"column:tls_ms"`
	FirstByteMS  *float64 `gorm:"column:first_byte_ms"`
	StartedAt    time.Time
	FinishedAt   time.Time
	Succeeded    bool
}

// MaxResponseBody bounds the stored response body.
const MaxResponseBody = 4 << 10

// InsertDelivery stores one attempt; a missing id is generated.
func (s *Store) InsertDelivery(ctx context.Context, d *WebhookDelivery) error {
	if d.ID == "" {
		d.ID = NewID(PrefixDelivery)
	}
	d.ResponseBody = storableText(d.ResponseBody, MaxResponseBody)
	err := s.write(ctx, func(tx *gorm.DB) error { return tx.Create(d).Error })
	if err != nil {
		return fmt.Errorf("insert delivery: %w", err)
	}
	return nil
}

// DeliveryQuery filters a tenant's deliveries.
type DeliveryQuery struct {
	Page       Page
	EndpointID string
	EventID    string
	EventType  string
	Succeeded  *bool
}

// ListDeliveries returns a page of the tenant's delivery attempts, newest first.
func (s *Store) ListDeliveries(ctx context.Context, tenantID string, q DeliveryQuery) ([]WebhookDelivery, int64, error) {
	db := s.r.WithContext(ctx).Model(&WebhookDelivery{}).Where("tenant_id = ?", tenantID)
	if q.EndpointID != "" {
		db = db.Where("endpoint_id = ?", q.EndpointID)
	}
	if q.EventID != "" {
		db = db.Where("event_id = ?", q.EventID)
	}
	if q.EventType != "" {
		db = db.Where("event_type = ?", q.EventType)
	}
	if q.Succeeded != nil {
		db = db.Where("succeeded = ?", *q.Succeeded)
	}
	var total int64
	if err := db.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count deliveries: %w", err)
	}
	out := []WebhookDelivery{}
	if err := db.Order("started_at DESC, id DESC").Limit(q.Page.Limit).Offset(q.Page.Offset()).Find(&out).Error; err != nil {
		return nil, 0, fmt.Errorf("list deliveries: %w", err)
	}
	return out, total, nil
}

// GetDelivery returns one of the tenant's delivery attempts.
func (s *Store) GetDelivery(ctx context.Context, tenantID, id string) (*WebhookDelivery, error) {
	var d WebhookDelivery
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenantID, id).Take(&d).Error; err != nil {
		return nil, notFoundOr(err, "load delivery")
	}
	return &d, nil
}

// NextReplay reserves the next replay number of an (event, endpoint) pair
// and records the workflow id that workflowID derives from it.
func (s *Store) NextReplay(ctx context.Context, eventID, endpointID string, workflowID func(n int) string) (int, string, error) {
	var (
		n  int
		id string
	)
	err := s.write(ctx, func(tx *gorm.DB) error {
		var max *int
		if err := tx.Raw("SELECT MAX(n) FROM webhook_replays WHERE event_id = ? AND endpoint_id = ?", eventID, endpointID).Scan(&max).Error; err != nil {
			return fmt.Errorf("last replay: %w", err)
		}
		n = 1
		if max != nil {
			n = *max + 1
		}
		id = workflowID(n)
		return tx.Exec("INSERT INTO webhook_replays (event_id, endpoint_id, n, workflow_id, created_at) VALUES (?, ?, ?, ?, ?)",
			eventID, endpointID, n, id, s.now()).Error
	})
	if isUniqueViolation(err) {
		return 0, "", Errorf(KindConflict, "another replay of this delivery was started at the same moment; try again")
	}
	if err != nil {
		return 0, "", err
	}
	return n, id, nil
}

// storableText cuts s to at most max bytes on a character boundary and
// makes it text every database takes: valid UTF-8, without NUL (which
// PostgreSQL refuses in text).
func storableText(s string, max int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
