package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/api/inbound"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/mapping"
)

type ruleJSON struct {
	Source string `json:"source"`
	Field  string `json:"field"`
}

type inboundJSON struct {
	ID              string     `json:"id"`
	ModuleID        string     `json:"module_id"`
	URL             string     `json:"url"`
	Token           string     `json:"token"`
	SecretSet       bool       `json:"secret_set"`
	SignatureScheme string     `json:"signature_scheme"`
	Mapping         []ruleJSON `json:"mapping"`
	MatchFields     []string   `json:"match_fields"`
	Enabled         bool       `json:"enabled"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// inboundInput is the body of PUT …/inbound-webhook. Secret is raw so that
// absent (keep the secret), null (remove it) and a string (set it) differ.
type inboundInput struct {
	Secret          json.RawMessage `json:"secret"`
	SignatureScheme *string         `json:"signature_scheme"`
	Mapping         *[]ruleJSON     `json:"mapping"`
	MatchFields     []string        `json:"match_fields"`
	Enabled         *bool           `json:"enabled"`
}

func (in inboundInput) model() (models.InboundInput, error) {
	out := models.InboundInput{Enabled: true, MatchFields: in.MatchFields}
	var errs []models.FieldError
	switch {
	case in.Secret == nil:
	case bytes.Equal(in.Secret, []byte("null")):
		out.ClearSecret = true
	default:
		var secret string
		if err := json.Unmarshal(in.Secret, &secret); err != nil {
			errs = append(errs, models.FieldError{Field: "secret", Message: "must be a string, or null to remove the secret"})
		} else {
			out.Secret = &secret
		}
	}
	out.SignatureScheme = string(inbound.SchemeSHA256)
	if in.SignatureScheme != nil {
		out.SignatureScheme = *in.SignatureScheme
	}
	if in.Mapping != nil {
		out.Mapping = make([]mapping.Rule, len(*in.Mapping))
		for i, r := range *in.Mapping {
			out.Mapping[i] = mapping.Rule(r)
		}
	}
	if in.Enabled != nil {
		out.Enabled = *in.Enabled
	}
	if len(errs) > 0 {
		return out, models.ValidationError(errs)
	}
	return out, nil
}

// inboundURL is the public URL of a module's inbound webhook: under the
// configured public base URL, or else under the address the admin called.
func (s *Server) inboundURL(c *gin.Context, slug, token string) string {
	base := s.publicURL
	if base == "" {
		scheme := "http"
		if c.Request.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + c.Request.Host
	}
	return strings.TrimRight(base, "/") + "/api/webhooks/" + url.PathEscape(slug) + "/" + token
}

func (s *Server) inboundOut(c *gin.Context, w *models.InboundWebhook, token string) (inboundJSON, error) {
	m, err := s.store.GetModule(c.Request.Context(), w.TenantID, w.ModuleID)
	if err != nil {
		return inboundJSON{}, err
	}
	if token == "" {
		if token, err = s.store.InboundToken(w); err != nil {
			return inboundJSON{}, err
		}
	}
	out := inboundJSON{
		ID: w.ID, ModuleID: w.ModuleID, URL: s.inboundURL(c, m.Slug, token), Token: token, SecretSet: w.Secret != nil,
		SignatureScheme: w.SignatureScheme, Mapping: make([]ruleJSON, len(w.Mapping)), MatchFields: w.MatchFields,
		Enabled: w.Enabled, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
	}
	for i, r := range w.Mapping {
		out.Mapping[i] = ruleJSON(r)
	}
	if out.MatchFields == nil {
		out.MatchFields = []string{}
	}
	return out, nil
}

func (s *Server) writeInbound(c *gin.Context, status int, w *models.InboundWebhook, token string) {
	out, err := s.inboundOut(c, w, token)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(status, out)
}

func (s *Server) adminPutInbound(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	var body inboundInput
	if !s.readJSON(c, &body, false) {
		return
	}
	in, err := body.model()
	if err != nil {
		s.fail(c, err)
		return
	}
	w, token, created, err := s.store.ConfigureInbound(c.Request.Context(), tenantOf(c), c.Param("id"), in)
	if err != nil {
		s.fail(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	s.writeInbound(c, status, w, token)
}

func (s *Server) adminGetInbound(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	w, err := s.store.GetInbound(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.writeInbound(c, http.StatusOK, w, "")
}

func (s *Server) adminDeleteInbound(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	ctx := c.Request.Context()
	w, err := s.store.GetInbound(ctx, tenantOf(c), c.Param("id"))
	if err == nil {
		err = s.store.DeleteInbound(ctx, tenantOf(c), c.Param("id"))
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": w.ID, "deleted": true})
}

func (s *Server) adminRotateInboundToken(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	w, token, err := s.store.RotateInboundToken(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.writeInbound(c, http.StatusOK, w, token)
}

type inboundErrorJSON struct {
	Code    string              `json:"code"`
	Message string              `json:"message"`
	Details []models.FieldError `json:"details"`
}

type inboundEventJSON struct {
	ID            string              `json:"id"`
	ModuleID      string              `json:"module_id"`
	RequestID     string              `json:"request_id"`
	ReceivedAt    time.Time           `json:"received_at"`
	Status        int                 `json:"status"`
	Action        *string             `json:"action"`
	RecordID      *string             `json:"record_id"`
	Error         *inboundErrorJSON   `json:"error"`
	Headers       map[string][]string `json:"headers"`
	Body          string              `json:"body"`
	BodySize      int                 `json:"body_size"`
	BodyTruncated bool                `json:"body_truncated"`
	IP            string              `json:"ip"`
	DeliveryID    *string             `json:"delivery_id"`
	DuplicateOf   *string             `json:"duplicate_of"`
	ReplayOf      *string             `json:"replay_of"`
	// Replayable tells whether POST …/replay would apply the call again
	// (rather than answer 409): so the console offers Replay only there.
	Replayable bool `json:"replayable"`
}

func inboundEventOut(ev *models.InboundEvent) inboundEventJSON {
	out := inboundEventJSON{
		ID: ev.ID, ModuleID: ev.ModuleID, RequestID: ev.RequestID, ReceivedAt: ev.ReceivedAt, Status: ev.Status,
		Action: ev.Action, RecordID: ev.RecordID, Headers: nonNilHeaders(ev.Headers), Body: ev.Body,
		BodySize: ev.BodySize, BodyTruncated: ev.BodyTruncated, IP: ev.IP,
		DeliveryID: ev.DeliveryID, DuplicateOf: ev.DuplicateOf, ReplayOf: ev.ReplayOf,
		Replayable: ev.Replayable(),
	}
	if ev.Error != "" {
		out.Error = &inboundErrorJSON{Code: ev.Error, Message: ev.ErrorMessage, Details: ev.ErrorDetails}
		if out.Error.Details == nil {
			out.Error.Details = []models.FieldError{}
		}
	}
	return out
}

// inboundEventList is a page of a module's inbound calls, with the module.
type inboundEventList struct {
	cursorListOf[inboundEventJSON]
	Module moduleRefJSON `json:"module"`
}

func (s *Server) adminListInboundEvents(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	page, err := cursorPageOf(c, listInboundEvents)
	if err != nil {
		s.fail(c, err)
		return
	}
	evs, total, err := s.store.ListInboundEvents(c.Request.Context(), tenantOf(c), c.Param("id"),
		models.InboundEventQuery{Page: page.query(), After: page.After, CountUpTo: maxCounted})
	if err != nil {
		s.fail(c, err)
		return
	}
	// The module is named beside its calls, so that a reader (the console)
	// shows its name without a second call; it is cached, and
	// ListInboundEvents has just read it.
	m, err := s.store.GetModule(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, inboundEventList{
		cursorListOf: pageOut(listInboundEvents, page, evs, total, inboundEventPosition, inboundEventOut),
		Module:       moduleRefOut(m),
	})
}

// inboundEventPosition is a call's place in its module's inbound calls.
func inboundEventPosition(ev *models.InboundEvent) models.Position {
	return models.Position{At: ev.ReceivedAt, ID: ev.ID}
}

// adminReplayInboundEvent applies a kept call's body again, through the
// webhook's current mapping: after a mapping is fixed, the calls it refused
// need not be sent again by their senders. The replay is kept as an
// inbound event of its own, with replay_of; it answers that event (202) or
// the error the call met (422 mapping_failed, say).
func (s *Server) adminReplayInboundEvent(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	ctx := c.Request.Context()
	orig, err := s.store.GetInboundEvent(ctx, tenantOf(c), c.Param("id"), c.Param("eventId"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if !orig.Replayable() {
		s.fail(c, models.Errorf(models.KindConflict, "the call answered %d cannot be replayed: only calls whose whole body was read and whose signature passed can", orig.Status))
		return
	}
	w, err := s.store.GetInbound(ctx, tenantOf(c), c.Param("id"))
	if errors.Is(err, models.ErrNotFound) {
		err = models.Errorf(models.KindConflict, "the module has no inbound webhook any more")
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx = context.WithoutCancel(ctx)
	ev := &models.InboundEvent{
		ID: models.NewID(models.PrefixInboundEvent), TenantID: w.TenantID, ModuleID: w.ModuleID, WebhookID: w.ID,
		RequestID: requestID(c), Headers: orig.Headers, Body: orig.Body, BodySize: orig.BodySize, IP: c.ClientIP(),
		ReplayOf: &orig.ID, ReceivedAt: s.now().UTC(),
	}
	payload, err := decodePayload([]byte(orig.Body))
	if err == nil {
		_, err = s.store.ApplyInbound(ctx, w, payload, ev)
	}
	if err != nil {
		s.rejectInbound(ctx, c, ev, err)
		return
	}
	s.metrics.inbound.WithLabelValues("replayed").Inc()
	c.JSON(http.StatusAccepted, inboundEventOut(ev))
}
