package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

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
	c.JSON(http.StatusOK, deletedJSON{ID: w.ID, Deleted: true})
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
