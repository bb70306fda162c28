package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
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
	Enabled     *bool             `json:"enabled,omitempty"`
	Secret      string            `json:"secret,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// Filter maps a field's name to the value it must equal, or to an
	// object of operators and their values ({"gte": 100}); api/README.md
	// lists the operators.
	Filter map[string]any `json:"filter,omitempty"`
	// Ordering is "none" or "record".
	Ordering string `json:"ordering,omitempty"`
	// Auth and TLS are the endpoint's credentials for its receiver.
	Auth *EndpointAuth `json:"auth,omitempty"`
	TLS  *EndpointTLS  `json:"tls,omitempty"`
	// RateLimit and MaxInFlight throttle the endpoint; nil is no limit.
	RateLimit   *RateLimit `json:"rate_limit,omitempty"`
	MaxInFlight *int       `json:"max_in_flight,omitempty"`
}

// EndpointAuth is an endpoint's OAuth2 client credentials: its requests
// carry an access token from TokenURL. In answers ClientSecret is
// "<redacted>". In an update, an empty ClientSecret keeps the stored one,
// and an EndpointAuth with nothing set removes the endpoint's auth.
type EndpointAuth struct {
	Type         string   `json:"type,omitempty"` // oauth2_client_credentials
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Audience     string   `json:"audience,omitempty"`
}

// EndpointTLS is an endpoint's TLS material, PEM: the client certificate
// and key it presents, and the CA certificates its receiver is verified
// against. In an update, an empty ClientKey beside a ClientCertificate
// keeps the stored key, and an EndpointTLS with nothing set removes it.
type EndpointTLS struct {
	ClientCertificate string `json:"client_certificate,omitempty"`
	ClientKey         string `json:"client_key,omitempty"`
	CACertificates    string `json:"ca_certificates,omitempty"`
}

// EndpointTLSInfo describes an endpoint's TLS material as answers show
// it: ClientKey is "<redacted>" beside a client certificate.
type EndpointTLSInfo struct {
	ClientCertificate *Certificate  `json:"client_certificate"`
	ClientKey         *string       `json:"client_key"`
	CACertificates    []Certificate `json:"ca_certificates"`
}

// Certificate describes a certificate; NotAfter is when it expires.
type Certificate struct {
	Subject   string    `json:"subject"`
	Issuer    string    `json:"issuer"`
	NotBefore time.Time `json:"not_before"`
	NotAfter  time.Time `json:"not_after"`
	SHA256    string    `json:"sha256"`
}

// RateLimit is an endpoint's rate_limit: at most PerSecond requests in
// any one second.
type RateLimit struct {
	PerSecond int `json:"per_second"`
}

// EndpointUpdate is a change of an endpoint's settings: what is nil stays.
// Events, ModuleIDs, Headers and Filter, when set, replace the whole list
// or set (an empty Headers or Filter removes them). The secret changes
// only by RotateEndpointSecret.
type EndpointUpdate struct {
	URL         *string            `json:"url,omitempty"`
	Description *string            `json:"description,omitempty"`
	Events      *[]string          `json:"events,omitempty"`
	ModuleIDs   *[]string          `json:"module_ids,omitempty"`
	RetryMax    *int               `json:"retry_max,omitempty"`
	Enabled     *bool              `json:"enabled,omitempty"`
	Headers     *map[string]string `json:"headers,omitempty"`
	Filter      *map[string]any    `json:"filter,omitempty"`
	Ordering    *string            `json:"ordering,omitempty"`
	Auth        *EndpointAuth      `json:"auth,omitempty"`
	TLS         *EndpointTLS       `json:"tls,omitempty"`
	// RateLimit and MaxInFlight, when set, replace the throttle's member;
	// a set Null removes it.
	RateLimit   *Nullable[RateLimit] `json:"rate_limit,omitempty"`
	MaxInFlight *Nullable[int]       `json:"max_in_flight,omitempty"`
}

// Nullable is a member of a change that may remove a setting: null when
// Null, else Value.
type Nullable[T any] struct {
	Value T
	Null  bool
}

// MarshalJSON writes null or the value.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.Null {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// Endpoint is a webhook endpoint as the API shows it; Raw is the answer as
// sent.
type Endpoint struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Kind is what URL names: "http", "amqp" or "nats"; a broker URL's
	// password shows as "****".
	Kind        string   `json:"kind"`
	Description string   `json:"description"`
	Events      []string `json:"events"`
	// ModuleIDs is empty for every module; Modules names those of them
	// that still exist.
	ModuleIDs []string    `json:"module_ids"`
	Modules   []ModuleRef `json:"modules"`
	RetryMax  int         `json:"retry_max"`
	Enabled   bool        `json:"enabled"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	// PreviousSecretExpiresAt is, during a rotation's grace period, when
	// the previous secret stops signing.
	PreviousSecretExpiresAt *time.Time     `json:"previous_secret_expires_at"`
	Health                  EndpointHealth `json:"health"`
	// Headers names the custom headers, each value "<redacted>"; their
	// values are read by EndpointHeaders.
	Headers  map[string]string `json:"headers"`
	Filter   map[string]any    `json:"filter"`
	Ordering string            `json:"ordering"`
	// Auth and TLS are nil when the endpoint has none; their secrets are
	// "<redacted>".
	Auth *EndpointAuth    `json:"auth"`
	TLS  *EndpointTLSInfo `json:"tls"`
	// RateLimit and MaxInFlight are the throttle; nil is no limit.
	RateLimit   *RateLimit `json:"rate_limit"`
	MaxInFlight *int       `json:"max_in_flight"`
	// Secret is set only in the answers to create and rotate-secret.
	Secret string `json:"secret,omitempty"`
	// Stats is set only when asked for (EndpointListQuery.Stats,
	// GetEndpoint's stats).
	Stats *EndpointStats  `json:"stats,omitempty"`
	Raw   json.RawMessage `json:"-"`
}

// ModuleRef names a module where another object refers to it.
type ModuleRef struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// EndpointHealth is an endpoint's health, updated as each delivery ends.
type EndpointHealth struct {
	State               string     `json:"state"` // healthy, failing, disabled
	ConsecutiveFailures int        `json:"consecutive_failures"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	DisabledAt          *time.Time `json:"disabled_at"`
	DisabledReason      *string    `json:"disabled_reason"` // gone, failing, manual
}

// AttemptStats counts delivery attempts; the rate and percentiles are nil
// without attempts.
type AttemptStats struct {
	Attempts    int      `json:"attempts"`
	Succeeded   int      `json:"succeeded"`
	SuccessRate *float64 `json:"success_rate"`
	P50MS       *float64 `json:"p50_ms"`
	P95MS       *float64 `json:"p95_ms"`
}

// EndpointStats is an endpoint's attempts over the last 24 UTC hours,
// overall and hour by hour, oldest first.
type EndpointStats struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	AttemptStats
	Hours []HourStats `json:"hours"`
}

// HourStats is an endpoint's attempts in the hour from Start.
type HourStats struct {
	Start time.Time `json:"start"`
	AttemptStats
}

// EndpointSecret is what signs an endpoint's deliveries: the current
// secret and, during a rotation's grace period, the previous one.
type EndpointSecret struct {
	Secret                  string     `json:"secret"`
	PreviousSecret          string     `json:"previous_secret,omitempty"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at,omitempty"`
}

const endpointsPath = "/api/admin/webhook-endpoints"

func endpointPath(endpointID string) string {
	return endpointsPath + "/" + escape(endpointID)
}

// statsQuery asks for an endpoint's stats, or for nothing.
func statsQuery(stats bool) url.Values {
	if stats {
		return url.Values{"include": {"stats"}}
	}
	return nil
}

// endpoint makes one call whose answer is an endpoint, kept as sent too.
func (c *Client) endpoint(ctx context.Context, method, path string, in any) (*Endpoint, error) {
	var ep Endpoint
	raw, err := c.do(ctx, method, path, in, &ep)
	if err != nil {
		return nil, err
	}
	ep.Raw = raw
	return &ep, nil
}

// CreateEndpoint subscribes a webhook endpoint (an admin route); the
// answer carries its signing Secret.
func (c *Client) CreateEndpoint(ctx context.Context, in EndpointInput) (*Endpoint, error) {
	return c.endpoint(ctx, http.MethodPost, endpointsPath, in)
}

// EndpointListQuery selects a page of the tenant's endpoints, newest
// first: Page from 1 (0 is the first), Limit 1 to 100 (0: the API's
// default, 20); Stats adds each one's Stats.
type EndpointListQuery struct {
	Page, Limit int
	Stats       bool
}

// ListEndpoints reads a page of the tenant's endpoints, without their
// secrets (an admin route).
func (c *Client) ListEndpoints(ctx context.Context, q EndpointListQuery) (*Page[Endpoint], error) {
	v := statsQuery(q.Stats)
	if v == nil {
		v = url.Values{}
	}
	setPage(v, q.Page, q.Limit)
	var p Page[Endpoint]
	if _, err := c.do(ctx, http.MethodGet, withQuery(endpointsPath, v), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetEndpoint reads one endpoint without its secret, with its Stats when
// stats is true (an admin route).
func (c *Client) GetEndpoint(ctx context.Context, endpointID string, stats bool) (*Endpoint, error) {
	return c.endpoint(ctx, http.MethodGet, withQuery(endpointPath(endpointID), statsQuery(stats)), nil)
}

// UpdateEndpoint changes an endpoint's settings (an admin route). Setting
// values, it may be sent again after a network error.
func (c *Client) UpdateEndpoint(ctx context.Context, endpointID string, in EndpointUpdate) (*Endpoint, error) {
	return c.endpoint(ctx, http.MethodPatch, endpointPath(endpointID), in)
}

// DeleteEndpoint deletes an endpoint and its secrets; its delivery history
// stays (an admin route).
func (c *Client) DeleteEndpoint(ctx context.Context, endpointID string) error {
	_, err := c.do(ctx, http.MethodDelete, endpointPath(endpointID), nil, nil)
	return err
}

// EndpointSecret reads the secrets that sign an endpoint's deliveries (an
// admin route).
func (c *Client) EndpointSecret(ctx context.Context, endpointID string) (*EndpointSecret, error) {
	var s EndpointSecret
	if _, err := c.do(ctx, http.MethodGet, endpointPath(endpointID)+"/secret", nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// EndpointHeaders reads an endpoint's custom headers with their values,
// the only answer that holds them (an admin route).
func (c *Client) EndpointHeaders(ctx context.Context, endpointID string) (map[string]string, error) {
	var out struct {
		Headers map[string]string `json:"headers"`
	}
	if _, err := c.do(ctx, http.MethodGet, endpointPath(endpointID)+"/headers", nil, &out); err != nil {
		return nil, err
	}
	return out.Headers, nil
}

// RotateEndpointSecret gives an endpoint a new generated secret, answered
// as Secret; the previous one keeps signing beside it for grace (whole
// seconds, at most 7 days; 0 stops it at once). An admin route.
func (c *Client) RotateEndpointSecret(ctx context.Context, endpointID string, grace time.Duration) (*Endpoint, error) {
	body := struct {
		GraceSeconds int64 `json:"grace_seconds"`
	}{int64(grace / time.Second)}
	return c.endpoint(ctx, http.MethodPost, endpointPath(endpointID)+"/rotate-secret", body)
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
	Capped          bool            `json:"capped"`
	CappedAtEventID *string         `json:"capped_at_event_id"`
	NextSince       *time.Time      `json:"next_since"`
	Raw             json.RawMessage `json:"-"`
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
