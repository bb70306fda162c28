package api

import (
	"context"
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// errReadDeadline is the cause of a heavy read's context that ended at the
// deadline the server set.
var errReadDeadline = errors.New("heavy read past its deadline")

// errReadTooSlow answers a heavy read that could not get a connection, or
// finish, within its deadline: the database is busy with reads like it,
// and the same call may succeed in a moment.
var errReadTooSlow = &models.Error{Kind: models.KindUnavailable, Message: "the database is busy with reads like this one; retry later"}

// statusClientClosed is recorded (in metrics and the access log) for a
// call whose client went away before its answer: nobody receives it.
const statusClientClosed = 499

// heavyRead runs the route's reads on the store's heavy-read pool, within
// the heavy-read deadline, when the request is heavy (when is nil: always).
// A burst of such reads then waits for the few connections of its own
// pool, never in front of other tenants' key lookups and record reads, and
// a read that cannot get a connection or finish in time is answered 503
// instead of holding one for as long as it takes.
func (s *Server) heavyRead(when func(c *gin.Context) bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if when != nil && !when(c) {
			c.Next()
			return
		}
		ctx, cancel := context.WithTimeoutCause(models.HeavyRead(c.Request.Context()), s.heavyReadTimeout, errReadDeadline)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// asksStats reports whether the request asks for endpoint stats, the heavy
// part of an endpoint read.
func asksStats(c *gin.Context) bool { return c.Query("include") == "stats" }

// pastReadDeadline reports whether the request's context ended at the
// heavy-read deadline.
func pastReadDeadline(c *gin.Context) bool {
	ctx := c.Request.Context()
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), errReadDeadline)
}

// clientGone reports whether the request's context was cancelled: its
// client closed the connection (or the server is shutting down).
func clientGone(c *gin.Context) bool {
	return errors.Is(c.Request.Context().Err(), context.Canceled)
}

// warnSlowRead logs, at WARN, a heavy read refused at its deadline, at most
// one line a second.
func (s *Server) warnSlowRead(c *gin.Context, err error) {
	skipped, ok := s.slowReads.take(s.now())
	if !ok {
		return
	}
	s.log.WarnContext(c.Request.Context(), "heavy read past its deadline; call refused with 503",
		"request_id", requestID(c), "error", err, "deadline", s.heavyReadTimeout.String(), "refused_unlogged", skipped)
}
