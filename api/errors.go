package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Error codes of the API beyond the store's kinds. Every error body is
// {"error": code, "message": text, "request_id": id} plus what a code needs.
const (
	codeInvalidRequest = "invalid_request"
	codeForbidden      = "forbidden"
	codeNotFound       = "not_found"
	codeRateLimited    = "rate_limited"
	codeInternal       = "internal"
	codeUnavailable    = "unavailable"
	// codeIdempotencyKeyReused (422): an Idempotency-Key sent again with
	// another method, path or body (idempotency.go).
	codeIdempotencyKeyReused = "idempotency_key_reused"
)

// statusOf is the one table from error kinds to HTTP statuses.
var statusOf = map[models.Kind]int{
	models.KindInvalid:          http.StatusBadRequest,
	models.KindUnauthorized:     http.StatusUnauthorized,
	models.KindKeyExpired:       http.StatusUnauthorized,
	models.KindNotFound:         http.StatusNotFound,
	models.KindConflict:         http.StatusConflict,
	models.KindPrecondition:     http.StatusPreconditionFailed,
	models.KindValidation:       http.StatusUnprocessableEntity,
	models.KindInvalidURL:       http.StatusUnprocessableEntity,
	models.KindTooLarge:         http.StatusRequestEntityTooLarge,
	models.KindUnsupportedType:  http.StatusUnsupportedMediaType,
	models.KindMappingFailed:    http.StatusUnprocessableEntity,
	models.KindInvalidSignature: http.StatusUnauthorized,
	models.KindUnavailable:      http.StatusServiceUnavailable,
	models.KindCursorExpired:    http.StatusGone,
	models.KindInternal:         http.StatusInternalServerError,
}

// unavailableRetryAfter is the Retry-After, in seconds, of a 503
// unavailable: long enough for a client not to hammer a database that is
// restarting, short enough that a blip of a few seconds costs it little.
const unavailableRetryAfter = 2

// fail writes err as an error response. Errors that are not *models.Error
// (or *forbiddenError) are internal: they are logged with the request id
// and never shown.
func (s *Server) fail(c *gin.Context, err error) {
	status, body := s.errorOf(c, err)
	c.AbortWithStatusJSON(status, body)
}

// failAt writes err as the error response of a batch whose operation
// index failed: fail's answer, naming the operation.
func (s *Server) failAt(c *gin.Context, index int, err error) {
	status, body := s.errorOf(c, err)
	body.Index = &index
	c.AbortWithStatusJSON(status, body)
}

// errorOf is the status and body that answer err, with the headers its
// kind carries set on c.
func (s *Server) errorOf(c *gin.Context, err error) (int, errorBody) {
	if f, ok := errors.AsType[*forbiddenError](err); ok {
		return http.StatusForbidden, forbiddenBody(c, f.required)
	}
	e, status := s.public(c, err)
	switch e.Kind {
	case models.KindUnauthorized, models.KindKeyExpired:
		c.Header("WWW-Authenticate", `Bearer realm="recordhub"`)
	case models.KindUnavailable:
		c.Header("Retry-After", strconv.Itoa(unavailableRetryAfter))
	}
	return status, errorBody{Error: string(e.Kind), Message: e.Message, RequestID: requestID(c), Details: e.Details}
}

// forbiddenError refuses a key that lacks the required permission on a
// module of its own tenant (403 forbidden, naming it).
type forbiddenError struct{ required string }

func (e *forbiddenError) Error() string {
	return fmt.Sprintf("the API key lacks the %q permission", e.required)
}

// forbiddenBody is the body of a 403 forbidden.
func forbiddenBody(c *gin.Context, required string) errorBody {
	return errorBody{
		Error: codeForbidden, Message: (&forbiddenError{required}).Error(),
		RequestID: requestID(c), Required: required,
	}
}

// public returns what callers may see of err, and its status; an internal
// error is logged and replaced. A database that cannot be reached is not
// internal: the caller is told to retry, and the operator warned.
func (s *Server) public(c *gin.Context, err error) (*models.Error, int) {
	var e *models.Error
	switch {
	case errors.As(err, &e):
	case pastReadDeadline(c):
		// The server's own deadline, whatever the driver made of it (an
		// interrupted SQLite statement, a cancelled PostgreSQL one).
		s.warnSlowRead(c, err)
		e = errReadTooSlow
	case clientGone(c):
		s.log.InfoContext(c.Request.Context(), "client went away; call abandoned", "request_id", requestID(c), "error", err)
		return &models.Error{Kind: models.KindInternal, Message: "the client closed the request"}, statusClientClosed
	case models.IsUnavailable(err):
		s.warnUnavailable(c, err)
		e = models.ErrUnavailable
	default:
		s.log.ErrorContext(c.Request.Context(), "request failed", "request_id", requestID(c), "error", err)
		e = &models.Error{Kind: models.KindInternal, Message: "an internal error occurred; quote the request id when reporting it"}
	}
	status, ok := statusOf[e.Kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	return e, status
}

// failCode writes an error response that has no store kind.
func failCode(c *gin.Context, status int, code, message string) {
	c.AbortWithStatusJSON(status, errorBody{Error: code, Message: message, RequestID: requestID(c)})
}

func invalid(format string, args ...any) error {
	return models.Errorf(models.KindInvalid, format, args...)
}

// outageLog writes at most one line a second about calls refused because
// the database cannot be reached: an outage under load refuses thousands
// of calls, and one line a second with a count of the others tells the
// operator as much.
type outageLog struct {
	mu      sync.Mutex
	next    time.Time
	skipped int
}

// take reports whether a line may be written now, and how many were
// skipped since the last one.
func (l *outageLog) take(now time.Time) (skipped int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.skipped++
		return 0, false
	}
	skipped = l.skipped
	l.next, l.skipped = now.Add(time.Second), 0
	return skipped, true
}

// warnUnavailable logs, at WARN, a call refused because the database
// cannot be reached, unless a line was written less than a second ago.
func (s *Server) warnUnavailable(c *gin.Context, err error) {
	skipped, ok := s.outage.take(s.now())
	if !ok {
		return
	}
	s.log.WarnContext(c.Request.Context(), "database unavailable; call refused with 503",
		"request_id", requestID(c), "error", err, "refused_unlogged", skipped)
}
