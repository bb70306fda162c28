package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// EndpointInput is a webhook endpoint to create; the API's defaults stand
// for what is left empty.
type EndpointInput struct {
	URL         string            `json:"url"`
	Description string            `json:"description,omitempty"`
	Events      []string          `json:"events,omitempty"`
	ModuleIDs   []string          `json:"module_ids,omitempty"`
	RetryMax    *int              `json:"retry_max,omitempty"`
	Secret      string            `json:"secret,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// Filter maps a field's name to the value it must equal.
	Filter map[string]any `json:"filter,omitempty"`
	// Ordering is "none" or "record".
	Ordering string `json:"ordering,omitempty"`
}

// EndpointUpdate is a change of an endpoint's settings: what is nil stays.
type EndpointUpdate struct {
	Ordering *string `json:"ordering,omitempty"`
	Enabled  *bool   `json:"enabled,omitempty"`
}

// Endpoint is a webhook endpoint as the API shows it; Raw is the answer as
// sent.
type Endpoint struct {
	ID        string          `json:"id"`
	URL       string          `json:"url"`
	Events    []string        `json:"events"`
	ModuleIDs []string        `json:"module_ids"`
	Enabled   bool            `json:"enabled"`
	Ordering  string          `json:"ordering"`
	Raw       json.RawMessage `json:"-"`
}

func endpointPath(endpointID string) string {
	return "/api/admin/webhook-endpoints/" + escape(endpointID)
}

// CreateEndpoint subscribes a webhook endpoint (an admin route).
func (c *Client) CreateEndpoint(ctx context.Context, in EndpointInput) (*Endpoint, error) {
	var ep Endpoint
	raw, err := c.do(ctx, http.MethodPost, "/api/admin/webhook-endpoints", in, &ep)
	if err != nil {
		return nil, err
	}
	ep.Raw = raw
	return &ep, nil
}

// UpdateEndpoint changes an endpoint's settings (an admin route). Setting
// a value, it may be sent again after a network error.
func (c *Client) UpdateEndpoint(ctx context.Context, endpointID string, in EndpointUpdate) (*Endpoint, error) {
	var ep Endpoint
	raw, err := c.do(ctx, http.MethodPatch, endpointPath(endpointID), in, &ep)
	if err != nil {
		return nil, err
	}
	ep.Raw = raw
	return &ep, nil
}

// RecoveryInput is the window of a recovery; Until nil is now.
type RecoveryInput struct {
	Since time.Time
	Until *time.Time
}

// RecoveryStarted is the answer of a recovery's start.
type RecoveryStarted struct {
	RecoveryID string `json:"recovery_id"`
	WorkflowID string `json:"workflow_id"`
}

// Recovery is a recovery's status; Raw is the answer as sent.
type Recovery struct {
	ID         string     `json:"id"`
	EndpointID string     `json:"endpoint_id"`
	WorkflowID string     `json:"workflow_id"`
	Since      time.Time  `json:"since"`
	Until      time.Time  `json:"until"`
	Status     string     `json:"status"` // running, completed, failed
	Found      int        `json:"found"`
	Replayed   int        `json:"replayed"`
	Failed     int        `json:"failed"`
	Error      *string    `json:"error"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// Capped: the recovery stopped at its cap with events of its window
	// left; the next one starts at NextSince, with the same Until.
	Capped    bool            `json:"capped"`
	NextSince *time.Time      `json:"next_since"`
	Raw       json.RawMessage `json:"-"`
}

// StartRecovery starts replaying an endpoint's failed deliveries of a
// window (an admin route). After a network error it may have started one:
// repeat it only after an *Error.
func (c *Client) StartRecovery(ctx context.Context, endpointID string, in RecoveryInput) (*RecoveryStarted, error) {
	body := map[string]string{"since": in.Since.Format(time.RFC3339Nano)}
	if in.Until != nil {
		body["until"] = in.Until.Format(time.RFC3339Nano)
	}
	var out RecoveryStarted
	if _, err := c.do(ctx, http.MethodPost, endpointPath(endpointID)+"/recover", body, &out); err != nil {
		return nil, err
	}
	if out.RecoveryID == "" {
		return nil, errors.New("the API answered without a recovery_id")
	}
	return &out, nil
}

// RecoveryPath is the route of a recovery's status.
func RecoveryPath(endpointID, recoveryID string) string {
	return endpointPath(endpointID) + "/recoveries/" + escape(recoveryID)
}

// Recovery reads a recovery's status.
func (c *Client) Recovery(ctx context.Context, endpointID, recoveryID string) (*Recovery, error) {
	var r Recovery
	raw, err := c.do(ctx, http.MethodGet, RecoveryPath(endpointID, recoveryID), nil, &r)
	if err != nil {
		return nil, err
	}
	r.Raw = raw
	return &r, nil
}

// Resync is a resync's status, which its start answers too; Raw is the
// answer as sent.
type Resync struct {
	ID         string `json:"id"`
	EndpointID string `json:"endpoint_id"`
	WorkflowID string `json:"workflow_id"`
	// Position is the outbox position the resync's snapshot is taken at.
	Position   string          `json:"position"`
	Status     string          `json:"status"` // running, completed, failed
	Total      int             `json:"total"`
	Examined   int             `json:"examined"`
	Sent       int             `json:"sent"`
	Covered    int             `json:"covered"`
	Error      *string         `json:"error"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at"`
	Raw        json.RawMessage `json:"-"`
}

// StartResync sends every current record of the endpoint's modules to it
// as a record_snapshot event (an admin route). After a network error it
// may have started: repeat it only after an *Error.
func (c *Client) StartResync(ctx context.Context, endpointID string) (*Resync, error) {
	var r Resync
	raw, err := c.do(ctx, http.MethodPost, endpointPath(endpointID)+"/resync", struct{}{}, &r)
	if err != nil {
		return nil, err
	}
	if r.ID == "" {
		return nil, errors.New("the API answered without a resync id")
	}
	r.Raw = raw
	return &r, nil
}

// ResyncPath is the route of a resync's status.
func ResyncPath(endpointID, resyncID string) string {
	return endpointPath(endpointID) + "/resyncs/" + escape(resyncID)
}

// Resync reads a resync's status.
func (c *Client) Resync(ctx context.Context, endpointID, resyncID string) (*Resync, error) {
	var r Resync
	raw, err := c.do(ctx, http.MethodGet, ResyncPath(endpointID, resyncID), nil, &r)
	if err != nil {
		return nil, err
	}
	r.Raw = raw
	return &r, nil
}
