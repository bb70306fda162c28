package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
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
	"X-Webhook-Signature", "X-Webhook-Signature-Previous", "X-Hub-Signature-256", "X-GitHub-Event", "X-GitHub-Delivery",
	"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature",
}

// receiveInbound is the public inbound webhook. Checks run cheapest and
// least revealing first: the URL (one answer for every wrong slug or
// token), the rate limit, the body's size, whether the webhook is enabled,
// the content type, the signature, the JSON; then the mapping. Every call
// that names a webhook is kept as an inbound event, whatever its outcome,
// before the answer is sent, except a signed repeat of an applied call. A
// call that repeats an applied call's delivery id is answered as that call
// was, and applied once.
//
// The webhook's budget of InboundRateLimit calls a minute belongs to its
// sender: when the webhook has a secret, only calls whose signature
// verifies and whose signed id no earlier call carried are charged to it,
// after the body is read. Every other call is charged to a budget of its
// own per webhook and source address (sourceBudget): a call whose
// signature fails, before the body is read when its signature headers
// alone already fail; and a signed call sent again, by its sender or by
// anybody who captured it. So neither a flood of forged calls nor one of
// replayed ones locks the sender out, and a forged one costs no body read
// once that budget is spent. A replay of an applied call is recognised
// before any budget is taken and writes nothing: it is answered from the
// stored call (replayInbound).
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
	h, now := c.Request.Header, s.now()
	ev := &models.InboundEvent{
		ID: models.NewID(models.PrefixInboundEvent), TenantID: w.TenantID, ModuleID: w.ModuleID, WebhookID: w.ID,
		RequestID: cl.requestID, Headers: keptHeadersOf(h), IP: c.ClientIP(), ReceivedAt: now.UTC(),
	}
	senderBudget, sourceBudget := "inbound:"+w.ID, "inbound-source:"+w.ID+":"+sourceOf(c.ClientIP())

	scheme, _ := inbound.ParseScheme(w.SignatureScheme)
	secret, signed, sigErr := s.store.InboundSecret(w)
	signed = signed || sigErr != nil // a secret that cannot be read still requires a signature
	if signed && sigErr == nil {
		sigErr = inbound.CheckHeaders(scheme, h, now)
	}
	// Known before the body is read: a webhook without a secret (every
	// call is its sender's), or a call whose signature headers already fail.
	if !signed || sigErr != nil {
		budget := senderBudget
		if signed {
			budget = sourceBudget
		}
		if !s.allowInbound(ctx, c, ev, budget, false) {
			return
		}
	}
	if !signed {
		// Nothing is signed: the sender's own delivery id (Idempotency-Key,
		// say) is all there is to dedupe on.
		ev.DeliveryID = deliveryIDOf(h)
	}

	body, bodyErr := readBody(c)
	ev.Body, ev.BodySize = string(body), len(body)
	if bodyErr != nil {
		ev.BodyTruncated = true
		ev.BodySize = max(len(body), int(c.Request.ContentLength))
	}
	if signed && sigErr == nil {
		// Not charged yet: the headers looked right, and only the body
		// tells a forgery. A body that could not be read whole cannot be
		// verified.
		if bodyErr == nil {
			sigErr = inbound.Verify(scheme, secret, h, body, now)
		} else {
			sigErr = &inbound.Error{Message: "the body could not be verified"}
		}
		budget, id := senderBudget, ""
		if sigErr != nil {
			budget = sourceBudget
		} else {
			// Only a signed id tells a repeat: anybody can send any
			// unsigned one.
			id = inbound.MessageID(scheme, h, body)
			applied, seen, err := s.store.InboundDelivery(ctx, w.ID, id)
			switch {
			case err != nil:
				// Not charged: a database that cannot answer this
				// cannot apply the call either.
				s.rejectInbound(ctx, c, ev, err)
				return
			case applied != nil:
				s.replayInbound(ctx, c, applied, sourceBudget)
				return
			case seen:
				// A retry of a call that failed is processed anew (its
				// mapping may have been fixed since), but it is a
				// repeat all the same.
				budget = sourceBudget
			}
		}
		if !s.allowInbound(ctx, c, ev, budget, true) {
			return
		}
		if sigErr == nil {
			ev.DeliveryID = &id
		}
	}

	err = bodyErr
	if err == nil && !w.Enabled {
		err = errInboundDisabled
	}
	if err == nil && !isJSONType(h.Get("Content-Type")) {
		err = errNotJSON
	}
	if err == nil && sigErr != nil {
		err = sigErr
		if ie := (*inbound.Error)(nil); errors.As(sigErr, &ie) {
			err = &models.Error{Kind: models.KindInvalidSignature, Message: ie.Message}
		}
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

// replayInbound answers a signed call that repeats an applied call, its
// sender's retry or anybody's replay of a captured call, as the applied
// call was answered. It writes nothing: the access log has the call. It is
// charged to budget, its source's, and answers 429 once that is spent:
// replays cost whoever sends them, never the webhook's sender.
func (s *Server) replayInbound(ctx context.Context, c *gin.Context, applied *models.InboundEvent, budget string) {
	if !s.chargeInbound(ctx, c, budget) {
		s.metrics.inbound.WithLabelValues(codeRateLimited).Inc()
		return
	}
	c.Header("Idempotent-Replayed", "true")
	s.metrics.inbound.WithLabelValues("duplicate").Inc()
	c.JSON(http.StatusAccepted, inboundAnswer{RecordID: *applied.RecordID, Action: *applied.Action})
}

// chargeInbound charges one call to budget. When the budget is spent it
// answers 429 and returns false. When the limiter itself fails the call
// passes, as elsewhere.
func (s *Server) chargeInbound(ctx context.Context, c *gin.Context, budget string) bool {
	res, err := s.limiter.Allow(ctx, budget, models.InboundRateLimit)
	if err != nil {
		s.metrics.limiterErrors.Inc()
		s.log.WarnContext(ctx, "rate limiter failed; letting the request through", "request_id", requestID(c), "error", err)
		return true
	}
	return s.applyLimit(c, res)
}

// allowInbound charges one call to budget (chargeInbound). When the budget
// is spent it also keeps the call, without its body.
func (s *Server) allowInbound(ctx context.Context, c *gin.Context, ev *models.InboundEvent, budget string, read bool) bool {
	if s.chargeInbound(ctx, c, budget) {
		return true
	}
	msg := "rate limit exceeded; the body was not kept"
	if !read {
		// The body is not read: a flood must cost as little as possible.
		msg = "rate limit exceeded; the body was not read"
		ev.BodySize = max(0, int(c.Request.ContentLength))
	}
	// A flood's bodies are not worth keeping either.
	ev.Body, ev.BodyTruncated = "", ev.BodySize != 0 || (!read && c.Request.ContentLength != 0)
	ev.SetError(http.StatusTooManyRequests, codeRateLimited, msg, nil)
	s.keepInbound(ctx, c, ev)
	return false
}

// sourceOf is the source that a call not charged to the sender is counted
// against: its address, or for IPv6 its /64, which one host usually holds
// whole and could otherwise spread a flood over.
func sourceOf(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// deliveryHeaders carry a sender's id of a call, which stays the same when
// the sender retries it: a generic idempotency key, Standard Webhooks' (and
// recordhub's own) message id, GitHub's delivery id. None of them is signed
// by the sha256 and github schemes, and anybody replaying a captured call
// can change them: they are used only by webhooks without a secret; a
// signed call's id is inbound.MessageID.
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
	// A database that cannot be reached cannot keep the call either, and
	// trying could add a connect timeout to the answer: the sender is
	// told to retry, and its retry is kept.
	if e.Kind != models.KindUnavailable {
		s.keepInbound(ctx, c, ev)
	}
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
