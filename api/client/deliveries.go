package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Delivery is one delivery attempt as listed, without headers and bodies.
type Delivery struct {
	ID        string `json:"id"`
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	// RecordID is nil for an event about no record, or whose event could
	// not be read.
	RecordID   *string `json:"record_id"`
	EndpointID string  `json:"endpoint_id"`
	WorkflowID string  `json:"workflow_id"`
	RunID      string  `json:"run_id"`
	// Attempt counts from 1 within its delivery; 0 for a skipped delivery.
	Attempt        int       `json:"attempt"`
	ReplayOf       *string   `json:"replay_of"`
	RequestURL     string    `json:"request_url"`
	ResponseStatus *int      `json:"response_status"`
	Error          *string   `json:"error"`
	ErrorMessage   *string   `json:"error_message"`
	RemoteIP       string    `json:"remote_ip"`
	DurationMS     float64   `json:"duration_ms"`
	DNSMS          *float64  `json:"dns_ms"`
	ConnectMS      *float64  `json:"connect_ms"`
	TLSMS          *float64  `json:"tls_ms"`
	FirstByteMS    *float64  `json:"first_byte_ms"`
	StartedAt      time.Time `json:"started_at"`
	// FinishedAt is nil while the attempt is in flight.
	FinishedAt *time.Time `json:"finished_at"`
	Succeeded  bool       `json:"succeeded"`
}

// DeliveryDetail is one delivery attempt in full: the request as sent (a
// custom header's value "<redacted>") and the start of the response.
type DeliveryDetail struct {
	Delivery
	RequestHeaders  map[string][]string `json:"request_headers"`
	RequestBody     string              `json:"request_body"`
	ResponseHeaders map[string][]string `json:"response_headers"`
	ResponseBody    string              `json:"response_body"`
}

// DeliveryQuery selects a page of the tenant's delivery attempts, newest
// first: after Cursor (a CursorPage's NextCursor) or at Page (from 1, the
// first 10,000 rows only), never both. Zero members select nothing.
type DeliveryQuery struct {
	Page   int
	Cursor string
	// Limit is the page size, 1 to 100; 0 is the API's default, 20.
	Limit      int
	EndpointID string
	EventID    string
	RecordID   string
	EventType  string
	// Succeeded, when set, keeps the attempts that succeeded (true) or
	// those that did not, in flight included (false).
	Succeeded *bool
	// Since is inclusive, Until exclusive, on the attempt's start.
	Since, Until time.Time
	// Error is a delivery error code, such as "timeout" or "http_status".
	Error string
}

func (q DeliveryQuery) values() url.Values {
	v := url.Values{}
	setPage(v, q.Page, q.Limit)
	setString(v, "cursor", q.Cursor)
	setString(v, "endpoint_id", q.EndpointID)
	setString(v, "event_id", q.EventID)
	setString(v, "record_id", q.RecordID)
	setString(v, "event_type", q.EventType)
	if q.Succeeded != nil {
		v.Set("succeeded", strconv.FormatBool(*q.Succeeded))
	}
	setTime(v, "since", q.Since)
	setTime(v, "until", q.Until)
	setString(v, "error", q.Error)
	return v
}

const deliveriesPath = "/api/admin/webhook-deliveries"

func deliveryPath(deliveryID string) string { return deliveriesPath + "/" + escape(deliveryID) }

// ListDeliveries reads the page of delivery attempts q selects (an admin
// route).
func (c *Client) ListDeliveries(ctx context.Context, q DeliveryQuery) (*CursorPage[Delivery], error) {
	var p CursorPage[Delivery]
	if _, err := c.do(ctx, http.MethodGet, withQuery(deliveriesPath, q.values()), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Deliveries yields the delivery attempts q selects, following
// next_cursor from q's first page to the last, and stops at the first
// error, which it yields with a zero Delivery. Attempts made during the
// walk are newer than it and not in it.
func (c *Client) Deliveries(ctx context.Context, q DeliveryQuery) iter.Seq2[Delivery, error] {
	return walkCursor(ctx, func(ctx context.Context, cursor string) (*CursorPage[Delivery], error) {
		pq := q // each walk of the iterator starts from q
		if cursor != "" {
			pq.Page, pq.Cursor = 0, cursor
		}
		return c.ListDeliveries(ctx, pq)
	})
}

// GetDelivery reads one delivery attempt in full (an admin route).
func (c *Client) GetDelivery(ctx context.Context, deliveryID string) (*DeliveryDetail, error) {
	var d DeliveryDetail
	if _, err := c.do(ctx, http.MethodGet, deliveryPath(deliveryID), nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Replay is the delivery a replay started: its Temporal workflow execution.
type Replay struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// ReplayDelivery sends an attempt's event to its endpoint again, as a new
// delivery with attempts of its own (an admin route). After a network
// error it may have started one.
func (c *Client) ReplayDelivery(ctx context.Context, deliveryID string) (*Replay, error) {
	var r Replay
	if _, err := c.do(ctx, http.MethodPost, deliveryPath(deliveryID)+"/replay", nil, &r); err != nil {
		return nil, err
	}
	if r.WorkflowID == "" {
		return nil, errors.New("replay delivery: the API answered without a workflow_id")
	}
	return &r, nil
}
