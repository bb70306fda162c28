package api

import (
	"cmp"
	"encoding/json"
	"time"

	"github.com/recordhub/recordhub/models"
)

type endpointJSON struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Kind is what URL names: an HTTP receiver or a broker.
	Kind                    string     `json:"kind"`
	Description             string     `json:"description"`
	Events                  []string   `json:"events"`
	ModuleIDs               []string   `json:"module_ids"`
	RetryMax                int        `json:"retry_max"`
	Enabled                 bool       `json:"enabled"`
	CreatedAt               time.Time  `json:"created_at"`
	UpdatedAt               time.Time  `json:"updated_at"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	Health                  healthJSON `json:"health"`
	// Secret is present only in the answers to create and rotate-secret.
	Secret string `json:"secret,omitempty"`
	// Stats is present when asked for with include=stats.
	Stats *statsJSON `json:"stats,omitempty"`
	// Modules names the modules of ModuleIDs that still exist, so that a
	// reader (the console) shows names without a second call.
	Modules []moduleRefJSON `json:"modules"`
	// Headers names the custom headers, each value masked; the headers
	// route answers them in clear.
	Headers map[string]string `json:"headers"`
	// Filter is the content filter: field name → the value it must
	// equal, or → an object of operator → value; {} when there is none.
	Filter map[string]any `json:"filter"`
	// Ordering is "none" or "record" (each record's events in version
	// order).
	Ordering string `json:"ordering"`
	// Auth and TLS show the endpoint's credentials, secrets masked; null
	// when it has none (endpoint_credentials.go).
	Auth *endpointAuthJSON `json:"auth"`
	TLS  *endpointTLSJSON  `json:"tls"`
	// RateLimit and MaxInFlight are the throttle; null is no limit.
	RateLimit   *rateLimitJSON `json:"rate_limit"`
	MaxInFlight *int           `json:"max_in_flight"`
}

// healthJSON is an endpoint's health.
type healthJSON struct {
	State               string     `json:"state"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	LastSuccessAt       *time.Time `json:"last_success_at"`
	LastFailureAt       *time.Time `json:"last_failure_at"`
	DisabledAt          *time.Time `json:"disabled_at"`
	DisabledReason      *string    `json:"disabled_reason"`
}

// statsJSON is an endpoint's attempts over the last 24 UTC hours, the
// current one included, overall and hour by hour, oldest first (the
// console's chart).
type statsJSON struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	attemptStatsJSON
	Hours []hourStatsJSON `json:"hours"`
}

type hourStatsJSON struct {
	Start time.Time `json:"start"`
	attemptStatsJSON
}

type attemptStatsJSON struct {
	Attempts    int      `json:"attempts"`
	Succeeded   int      `json:"succeeded"`
	SuccessRate *float64 `json:"success_rate"`
	P50MS       *float64 `json:"p50_ms"`
	P95MS       *float64 `json:"p95_ms"`
}

func attemptStatsOut(a *models.AttemptStats) attemptStatsJSON {
	return attemptStatsJSON{Attempts: a.Attempts, Succeeded: a.Succeeded, SuccessRate: a.SuccessRate(), P50MS: a.P50MS, P95MS: a.P95MS}
}

func statsOut(st *models.EndpointStats) *statsJSON {
	out := &statsJSON{Since: st.Since, Until: st.Until, attemptStatsJSON: attemptStatsOut(&st.AttemptStats), Hours: make([]hourStatsJSON, len(st.Buckets))}
	for i := range st.Buckets {
		out.Hours[i] = hourStatsJSON{Start: st.Buckets[i].Start, attemptStatsJSON: attemptStatsOut(&st.Buckets[i].AttemptStats)}
	}
	return out
}

func endpointOut(e *models.WebhookEndpoint, now time.Time) endpointJSON {
	out := endpointJSON{
		ID: e.ID, URL: e.URL, Kind: models.DestinationKind(e.URL), Description: e.Description, Events: e.Events, ModuleIDs: e.ModuleIDs,
		RetryMax: e.RetryMax, Enabled: e.Enabled, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
		Ordering: cmp.Or(e.Ordering, models.OrderingNone),
		Health: healthJSON{
			State: e.HealthState(), ConsecutiveFailures: e.ConsecutiveFailures,
			LastSuccessAt: e.LastSuccessAt, LastFailureAt: e.LastFailureAt,
			DisabledAt: e.DisabledAt, DisabledReason: e.DisabledReason,
		},
	}
	if out.Events == nil {
		out.Events = []string{}
	}
	if out.ModuleIDs == nil {
		out.ModuleIDs = []string{}
	}
	out.RateLimit, out.MaxInFlight = throttleOut(e)
	out.Headers = maskedHeaders(e.HeaderNames)
	out.Auth, out.TLS = credentialsOut(e)
	out.Filter = e.Filter
	if out.Filter == nil {
		out.Filter = map[string]any{}
	}
	if e.PreviousSecret != nil && e.PreviousSecretExpiresAt != nil && e.PreviousSecretExpiresAt.After(now) {
		out.PreviousSecretExpiresAt = e.PreviousSecretExpiresAt
	}
	return out
}

type endpointInput struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	Events      *[]string `json:"events"`
	ModuleIDs   *[]string `json:"module_ids"`
	RetryMax    *int      `json:"retry_max"`
	Enabled     *bool     `json:"enabled"`
	Secret      *string   `json:"secret"`
	// Headers: absent, null or an object; see headersIn.
	Headers json.RawMessage `json:"headers"`
	// Filter: field name → the value it must equal, or → an object of
	// operator → value (models.EndpointFilter); {} removes the filter.
	Filter *map[string]any `json:"filter"`
	// Ordering: "none" or "record".
	Ordering *string `json:"ordering"`
	// Auth and TLS: absent, null or an object; see credentialsIn.
	Auth json.RawMessage `json:"auth"`
	TLS  json.RawMessage `json:"tls"`
	// RateLimit and MaxInFlight: absent, null or a value; see throttleIn.
	RateLimit   json.RawMessage `json:"rate_limit"`
	MaxInFlight json.RawMessage `json:"max_in_flight"`
}

func (in endpointInput) model() (models.EndpointInput, error) {
	h, err := headersIn(in.Headers)
	if err != nil {
		return models.EndpointInput{}, err
	}
	rate, inFlight, err := throttleIn(in.RateLimit, in.MaxInFlight)
	out := models.EndpointInput{
		URL: in.URL, Description: in.Description, Events: in.Events, ModuleIDs: in.ModuleIDs,
		RetryMax: in.RetryMax, Enabled: in.Enabled, Secret: in.Secret, Headers: h, Filter: in.Filter,
		Ordering: in.Ordering, RateLimitPerSecond: rate, MaxInFlight: inFlight,
	}
	if err == nil {
		err = credentialsIn(&out, in.Auth, in.TLS)
	}
	return out, err
}

// endpointSecretJSON answers an endpoint's signing secret, and during a
// rotation's grace the previous one, which still signs.
type endpointSecretJSON struct {
	PreviousSecret          string     `json:"previous_secret,omitempty"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at,omitempty"`
	Secret                  string     `json:"secret"`
}

// deliveryJSON is one attempt as listed, without headers and bodies.
type deliveryJSON struct {
	ID             string    `json:"id"`
	EventID        string    `json:"event_id"`
	EventType      string    `json:"event_type"`
	EndpointID     string    `json:"endpoint_id"`
	WorkflowID     string    `json:"workflow_id"`
	RunID          string    `json:"run_id"`
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
	// FinishedAt is null while the attempt is in flight (error
	// "in_flight"): its request may be at the receiver, its outcome is not
	// known yet.
	FinishedAt *time.Time `json:"finished_at"`
	Succeeded  bool       `json:"succeeded"`
	// RecordID is the record the event is about; null for an event about
	// no record (endpoint_disabled) or an attempt whose event was gone.
	RecordID *string `json:"record_id"`
}

// deliveryFullJSON is one attempt in full. Its members are never left out,
// not even when empty (an attempt that got no response has no headers):
// a separate type rather than omitempty, which would drop an empty map.
type deliveryFullJSON struct {
	deliveryJSON
	RequestHeaders  map[string][]string `json:"request_headers"`
	RequestBody     string              `json:"request_body"`
	ResponseHeaders map[string][]string `json:"response_headers"`
	ResponseBody    string              `json:"response_body"`
}

func deliveryOut(d *models.WebhookDelivery) deliveryJSON {
	out := deliveryJSON{
		ID: d.ID, EventID: d.EventID, EventType: d.EventType, EndpointID: d.EndpointID, WorkflowID: d.WorkflowID,
		RunID: d.RunID, Attempt: d.Attempt, ReplayOf: d.ReplayOf, RequestURL: d.RequestURL, ResponseStatus: d.ResponseStatus,
		RemoteIP: d.RemoteIP, DurationMS: d.DurationMS, DNSMS: d.DNSMS, ConnectMS: d.ConnectMS, TLSMS: d.TLSMS,
		FirstByteMS: d.FirstByteMS, StartedAt: d.StartedAt, Succeeded: d.Succeeded,
	}
	if !d.InFlight() {
		out.FinishedAt = &d.FinishedAt
	}
	if d.RecordID != "" {
		out.RecordID = &d.RecordID
	}
	if d.Error != "" {
		out.Error, out.ErrorMessage = &d.Error, &d.ErrorMessage
	}
	return out
}

func deliveryFullOut(d *models.WebhookDelivery) deliveryFullJSON {
	return deliveryFullJSON{
		deliveryJSON:   deliveryOut(d),
		RequestHeaders: nonNilHeaders(d.RequestHeaders), RequestBody: d.RequestBody,
		ResponseHeaders: nonNilHeaders(d.ResponseHeaders), ResponseBody: d.ResponseBody,
	}
}

// replayJSON answers a replay: the workflow execution that delivers it.
type replayJSON struct {
	RunID      string `json:"run_id"`
	WorkflowID string `json:"workflow_id"`
}

// recoveryInput is the body of a recovery's start; its times are
// parsed by bodyTime so that each is validated like any body field.
type recoveryInput struct {
	Since *string `json:"since"`
	Until *string `json:"until"`
}

// recoveryStartedJSON answers a recovery's start.
type recoveryStartedJSON struct {
	RecoveryID string `json:"recovery_id"`
	WorkflowID string `json:"workflow_id"`
}

// recoveryJSON is a recovery's status.
type recoveryJSON struct {
	ID         string     `json:"id"`
	EndpointID string     `json:"endpoint_id"`
	WorkflowID string     `json:"workflow_id"`
	Since      time.Time  `json:"since"`
	Until      time.Time  `json:"until"`
	Status     string     `json:"status"`
	Found      int        `json:"found"`
	Replayed   int        `json:"replayed"`
	Failed     int        `json:"failed"`
	Error      *string    `json:"error"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// Capped: the recovery stopped at its cap with events left; the next
	// recovery starts at NextSince (with the same until).
	Capped          bool       `json:"capped"`
	CappedAtEventID *string    `json:"capped_at_event_id"`
	NextSince       *time.Time `json:"next_since"`
}

// recoveryConflictBody refuses a recovery while another of the endpoint
// runs, naming it.
type recoveryConflictBody struct {
	errorBody
	RecoveryID string `json:"recovery_id"`
	WorkflowID string `json:"workflow_id"`
}

func recoveryOut(r *models.WebhookRecovery) recoveryJSON {
	out := recoveryJSON{
		ID: r.ID, EndpointID: r.EndpointID, WorkflowID: r.WorkflowID, Since: r.WindowSince, Until: r.WindowUntil,
		Status: r.Status, Found: r.Found, Replayed: r.Replayed, Failed: r.Failed, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Capped: r.Capped, CappedAtEventID: r.CappedAtEventID, NextSince: r.NextSince,
	}
	if r.Error != "" {
		out.Error = &r.Error
	}
	return out
}
