package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/api/inbound"
	"github.com/recordhub/recordhub/models"
)

// keptHeaders are the request headers an inbound event keeps: what tells
// senders, signatures and deliveries apart. Others may carry credentials.
var keptHeaders = []string{
	"Content-Type", "Content-Length", "User-Agent", "X-Request-Id", "Idempotency-Key",
	"X-Webhook-Signature", "X-Hub-Signature-256", "X-GitHub-Event", "X-GitHub-Delivery",
	"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature",
}

type inboundAnswer struct {
	RecordID string `json:"recordId"`
	Action   string `json:"action"`
}

// receiveInbound is the public inbound webhook. Checks run cheapest and
// least revealing first: the URL (one answer for every wrong slug or
// token), the webhook's rate limit, the body's size, whether the webhook
// is enabled, the content type, the signature, the JSON; then the mapping.
// Every call that names a webhook is kept as an inbound event, whatever
// its outcome, before the answer is sent. A call that repeats an applied
// call's delivery id is answered as that call was, and applied once.
func (s *Server) receiveInbound(c *gin.Context) {
	w, err := s.store.LookupInbound(c.Request.Context(), c.Param("moduleSlug"), c.Param("token"))
	if err != nil {
		if errors.Is(err, models.ErrNotFound) {
			err = errNoInbound
		}
		s.fail(c, err)
		return
	}
	cl := callOf(c)
	cl.tenantID, cl.moduleID = w.TenantID, w.ModuleID
	// The call is processed and kept even if its sender hangs up.
	ctx := context.WithoutCancel(c.Request.Context())
	ev := &models.InboundEvent{
		ID: models.NewID(models.PrefixInboundEvent), TenantID: w.TenantID, ModuleID: w.ModuleID, WebhookID: w.ID,
		RequestID: cl.requestID, Headers: keptHeadersOf(c.Request.Header), IP: c.ClientIP(), ReceivedAt: s.now().UTC(),
		DeliveryID: deliveryIDOf(c.Request.Header),
	}

	res, err := s.limiter.Allow(ctx, "inbound:"+w.ID, models.InboundRateLimit)
	if err != nil {
		s.metrics.limiterErrors.Inc()
		s.log.WarnContext(ctx, "rate limiter failed; letting the request through", "request_id", cl.requestID, "error", err)
	} else if !s.applyLimit(c, res) {
		// The body is not read: a flood must cost as little as possible.
		ev.BodyTruncated, ev.BodySize = c.Request.ContentLength != 0, max(0, int(c.Request.ContentLength))
		ev.SetError(http.StatusTooManyRequests, codeRateLimited, "rate limit exceeded; the body was not read", nil)
		s.keepInbound(ctx, c, ev)
		return
	}

	body, err := readBody(c)
	ev.Body, ev.BodySize = string(body), len(body)
	if err != nil {
		ev.BodyTruncated = true
		ev.BodySize = max(len(body), int(c.Request.ContentLength))
	}
	if err == nil && !w.Enabled {
		err = errInboundDisabled
	}
	if err == nil && !isJSONType(c.Request.Header.Get("Content-Type")) {
		err = errNotJSON
	}
	if err == nil {
		err = s.verifyInbound(w, c.Request.Header, body)
	}
	var payload any
	if err == nil {
		payload, err = decodePayload(body)
	}
	if err == nil {
		_, err = s.store.ApplyInbound(ctx, w, payload, ev)
	}
	if err != nil {
		s.rejectInbound(ctx, c, ev, err)
		return
	}
	outcome := *ev.Action
	if ev.DuplicateOf != nil {
		// A sender's retry of a call already applied: the same answer,
		// and nothing written again (as Stripe's idempotent requests).
		c.Header("Idempotent-Replayed", "true")
		outcome = "duplicate"
	}
	s.metrics.inbound.WithLabelValues(outcome).Inc()
	c.JSON(http.StatusAccepted, inboundAnswer{RecordID: *ev.RecordID, Action: *ev.Action})
}

// deliveryHeaders carry a sender's id of a call, which stays the same when
// the sender retries it: a generic idempotency key, Standard Webhooks' (and
// recordhub's own) message id, GitHub's delivery id.
var deliveryHeaders = []string{"Idempotency-Key", "Webhook-Id", "X-GitHub-Delivery"}

// deliveryIDOf returns the first usable delivery id the call carries.
func deliveryIDOf(h http.Header) *string {
	for _, name := range deliveryHeaders {
		id := strings.TrimSpace(h.Get(name))
		if id != "" && len(id) <= 256 && utf8.ValidString(id) {
			return &id
		}
	}
	return nil
}

var (
	// errNoInbound is the one answer to every URL that names no webhook.
	errNoInbound       = &models.Error{Kind: models.KindNotFound, Message: "no inbound webhook at this URL"}
	errInboundDisabled = &models.Error{Kind: models.KindNotFound, Message: "this inbound webhook is disabled"}
)

// verifyInbound checks the call's signature when the webhook has a secret.
func (s *Server) verifyInbound(w *models.InboundWebhook, h http.Header, body []byte) error {
	secret, ok, err := s.store.InboundSecret(w)
	if err != nil || !ok {
		return err
	}
	scheme, _ := inbound.ParseScheme(w.SignatureScheme)
	if err := inbound.Verify(scheme, secret, h, body, s.now()); err != nil {
		return &models.Error{Kind: models.KindInvalidSignature, Message: err.Error()}
	}
	return nil
}

// decodePayload decodes an inbound body: one JSON object or array, numbers
// kept exact.
func decodePayload(body []byte) (any, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return nil, invalid("the body must be a JSON object or array")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var payload any
	if err := dec.Decode(&payload); err != nil {
		return nil, invalid("the body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("the body holds more than one JSON value")
	}
	return payload, nil
}

// rejectInbound keeps a failed call with its error, then answers it.
func (s *Server) rejectInbound(ctx context.Context, c *gin.Context, ev *models.InboundEvent, err error) {
	e, status := s.public(c, err)
	ev.SetError(status, string(e.Kind), e.Message, e.Details)
	s.keepInbound(ctx, c, ev)
	s.fail(c, e)
}

// keepInbound writes an inbound event that failed before the mapping's
// transaction. A failure to keep it is logged: the answer stands.
func (s *Server) keepInbound(ctx context.Context, c *gin.Context, ev *models.InboundEvent) {
	s.metrics.inbound.WithLabelValues(ev.Error).Inc()
	if err := s.store.RecordInboundEvent(ctx, ev); err != nil {
		s.log.ErrorContext(ctx, "keep inbound event", "request_id", requestID(c), "inbound_event", ev.ID, "error", err)
	}
}

func keptHeadersOf(h http.Header) models.Headers {
	out := models.Headers{}
	for _, name := range keptHeaders {
		if v := h.Values(name); len(v) > 0 {
			out[name] = v
		}
	}
	return out
}
