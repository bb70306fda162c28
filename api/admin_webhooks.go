package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Replayer starts a new delivery of an attempt's event to its endpoint.
type Replayer interface {
	Replay(ctx context.Context, d *models.WebhookDelivery) (workflowID, runID string, err error)
}

type endpointJSON struct {
	ID                      string     `json:"id"`
	URL                     string     `json:"url"`
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
	// Filter is the content filter: field name → the value it must
	// equal; {} when there is none.
	Filter map[string]any `json:"filter"`
}

// moduleRefJSON names a module where another object refers to it.
type moduleRefJSON struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
}

func moduleRefOut(m *models.Module) moduleRefJSON {
	return moduleRefJSON{ID: m.ID, Slug: m.Slug, Name: m.Name}
}

// addModules names the modules of each endpoint in out. Modules are read
// through the store's cache, so this costs no query once they are warm; an
// id whose module was deleted is left out of modules (module_ids keeps it).
func (s *Server) addModules(ctx context.Context, tenantID string, out ...*endpointJSON) error {
	for _, e := range out {
		e.Modules = make([]moduleRefJSON, 0, len(e.ModuleIDs))
		for _, id := range e.ModuleIDs {
			m, err := s.store.GetModule(ctx, tenantID, id)
			if errors.Is(err, models.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			e.Modules = append(e.Modules, moduleRefOut(m))
		}
	}
	return nil
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

// includeStats reads include: "stats" asks for each endpoint's stats, no
// other value is known.
func includeStats(c *gin.Context) (bool, error) {
	switch c.Query("include") {
	case "":
		return false, nil
	case "stats":
		return true, nil
	}
	return false, invalid("include must be stats")
}

// addStats adds each endpoint's stats over the last 24 UTC hours (the
// current one included), in one read of their hourly rollups.
func (s *Server) addStats(c *gin.Context, tenantID string, out []endpointJSON) error {
	ids := make([]string, len(out))
	for i := range out {
		ids[i] = out[i].ID
	}
	stats, err := s.store.EndpointStatsAt(c.Request.Context(), tenantID, ids, s.now())
	if err != nil {
		return err
	}
	for i := range out {
		out[i].Stats = statsOut(stats[out[i].ID])
	}
	return nil
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

func endpointOut(e *models.WebhookEndpoint, now time.Time) endpointJSON {
	out := endpointJSON{
		ID: e.ID, URL: e.URL, Description: e.Description, Events: e.Events, ModuleIDs: e.ModuleIDs,
		RetryMax: e.RetryMax, Enabled: e.Enabled, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
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
	// Filter: field name → the value it must equal; {} removes the filter.
	Filter *map[string]any `json:"filter"`
}

func (in endpointInput) model() models.EndpointInput {
	return models.EndpointInput(in)
}

// checkURL is the subscription-time egress check; without one configured
// every URL is refused, never allowed.
func (s *Server) checkURL(ctx context.Context, rawURL string) error {
	if s.urlCheck == nil {
		return models.Errorf(models.KindInvalidURL, "outbound webhooks are not configured")
	}
	return s.urlCheck(ctx, rawURL)
}

func (s *Server) adminCreateEndpoint(c *gin.Context) {
	var in endpointInput
	if !s.readJSON(c, &in, false) {
		return
	}
	if in.URL == nil {
		s.fail(c, models.ValidationError([]models.FieldError{{Field: "url", Message: "is required"}}))
		return
	}
	e, secret, err := s.store.CreateEndpoint(c.Request.Context(), tenantOf(c), in.model(), s.checkURL)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := endpointOut(e, s.now())
	out.Secret = secret
	if err := s.addModules(c.Request.Context(), tenantOf(c), &out); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}

func (s *Server) adminListEndpoints(c *gin.Context) {
	page, err := pageOf(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	stats, err := includeStats(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	eps, total, err := s.store.ListEndpoints(c.Request.Context(), tenantOf(c), page)
	if err != nil {
		s.fail(c, err)
		return
	}
	now := s.now()
	out := list[endpointJSON]{Data: make([]endpointJSON, len(eps)), Total: total, Page: page.Page, Limit: page.Limit}
	for i := range eps {
		out.Data[i] = endpointOut(&eps[i], now)
		if err := s.addModules(c.Request.Context(), tenantOf(c), &out.Data[i]); err != nil {
			s.fail(c, err)
			return
		}
	}
	if stats {
		if err := s.addStats(c, tenantOf(c), out.Data); err != nil {
			s.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminGetEndpoint(c *gin.Context) {
	stats, err := includeStats(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	e, err := s.store.GetEndpoint(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := []endpointJSON{endpointOut(e, s.now())}
	if err := s.addModules(c.Request.Context(), tenantOf(c), &out[0]); err != nil {
		s.fail(c, err)
		return
	}
	if stats {
		if err := s.addStats(c, tenantOf(c), out); err != nil {
			s.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, out[0])
}

func (s *Server) adminUpdateEndpoint(c *gin.Context) {
	var in endpointInput
	if !s.readJSON(c, &in, false) {
		return
	}
	e, err := s.store.UpdateEndpoint(c.Request.Context(), tenantOf(c), c.Param("id"), in.model(), s.checkURL)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := endpointOut(e, s.now())
	if err := s.addModules(c.Request.Context(), tenantOf(c), &out); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminDeleteEndpoint(c *gin.Context) {
	if err := s.store.DeleteEndpoint(c.Request.Context(), tenantOf(c), c.Param("id")); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": c.Param("id"), "deleted": true})
}

// adminEndpointSecret answers the signing secret, and during a rotation's
// grace the previous one, which still signs.
func (s *Server) adminEndpointSecret(c *gin.Context) {
	e, err := s.store.GetEndpoint(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	current, previous, err := s.store.EndpointSecrets(e)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := gin.H{"secret": current}
	if previous != "" {
		out["previous_secret"] = previous
		out["previous_secret_expires_at"] = e.PreviousSecretExpiresAt
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminRotateEndpointSecret(c *gin.Context) {
	var in struct {
		GraceSeconds int `json:"grace_seconds"`
	}
	if !s.readJSON(c, &in, true) {
		return
	}
	e, secret, err := s.store.RotateEndpointSecret(c.Request.Context(), tenantOf(c), c.Param("id"), in.GraceSeconds)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := endpointOut(e, s.now())
	out.Secret = secret
	if err := s.addModules(c.Request.Context(), tenantOf(c), &out); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
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

func nonNilHeaders(h models.Headers) map[string][]string {
	if h == nil {
		return map[string][]string{}
	}
	return h
}

func (s *Server) adminListDeliveries(c *gin.Context) {
	page, err := cursorPageOf(c, listDeliveries)
	if err != nil {
		s.fail(c, err)
		return
	}
	q := models.DeliveryQuery{Page: page.query(), After: page.After, CountUpTo: maxCounted, EndpointID: c.Query("endpoint_id"), EventID: c.Query("event_id"), EventType: c.Query("event_type"),
		RecordID: c.Query("record_id")}
	if v := c.Query("succeeded"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.fail(c, invalid("succeeded must be true or false"))
			return
		}
		q.Succeeded = &b
	}
	if q.Since, err = timeParam(c, "since"); err != nil {
		s.fail(c, err)
		return
	}
	if q.Until, err = timeParam(c, "until"); err != nil {
		s.fail(c, err)
		return
	}
	if q.Since != nil && q.Until != nil && !q.Since.Before(*q.Until) {
		s.fail(c, invalid("since must be before until"))
		return
	}
	if q.Error = c.Query("error"); q.Error != "" && !slices.Contains(models.DeliveryErrors, q.Error) {
		s.fail(c, invalid("error must be one of %s", strings.Join(models.DeliveryErrors, ", ")))
		return
	}
	ds, total, err := s.store.ListDeliveries(c.Request.Context(), tenantOf(c), q)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, pageOut(listDeliveries, page, ds, total, deliveryPosition, deliveryOut))
}

// deliveryPosition is an attempt's place in the deliveries list.
func deliveryPosition(d *models.WebhookDelivery) models.Position {
	return models.Position{At: d.StartedAt, ID: d.ID}
}

func (s *Server) adminGetDelivery(c *gin.Context) {
	d, err := s.store.GetDelivery(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, deliveryFullOut(d))
}

// adminReplayDelivery sends the attempt's event to its endpoint again as a
// new workflow execution, with the same body and event id.
func (s *Server) adminReplayDelivery(c *gin.Context) {
	d, err := s.store.GetDelivery(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if s.replayer == nil {
		failCode(c, http.StatusServiceUnavailable, codeUnavailable, "webhook delivery is not running in this process")
		return
	}
	wid, rid, err := s.replayer.Replay(c.Request.Context(), d)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"workflow_id": wid, "run_id": rid})
}
