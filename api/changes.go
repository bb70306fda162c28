package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/api/changefeed"
	"github.com/recordhub/recordhub/models"
)

// The change feed: GET /api/modules/{id}/changes answers a page of the
// module's changes in commit order (models/changes.go says how none is
// skipped), or, asked for text/event-stream, follows them live through the
// process's hub of the module (package changefeed). api/README.md's
// "Change feed" is the integrators' account.

// Bounds and defaults of the change feed.
const (
	defaultChangesLimit = 100
	// DefaultChangesHeartbeat is how long a stream may stay silent: a
	// comment then keeps proxies from closing it as idle.
	DefaultChangesHeartbeat = 15 * time.Second
	// DefaultChangesWriteTimeout is how long one write to a stream may
	// block before its reader is cut off as too slow.
	DefaultChangesWriteTimeout = 10 * time.Second
	// streamLimitRetryAfter is the Retry-After of a stream refused past a
	// bound, in seconds.
	streamLimitRetryAfter = 5
	// streamPage is how many changes a stream takes at a time.
	streamPage = 500
)

// ChangesOptions bound the change feed's streams (Deps.Changes).
type ChangesOptions struct {
	// StreamsPerKey and StreamsPerTenant bound the streams open at once in
	// this process; changefeed's defaults when zero.
	StreamsPerKey, StreamsPerTenant int
	// Heartbeat and WriteTimeout: DefaultChangesHeartbeat and
	// DefaultChangesWriteTimeout when zero.
	Heartbeat, WriteTimeout time.Duration
	// Poll is how often a module's hub looks for changes without being
	// woken; changefeed.DefaultPoll when zero.
	Poll time.Duration
	// Ring is how many of a module's newest changes its hub keeps;
	// changefeed.DefaultRing when zero.
	Ring int
}

// EndStreams ends every change stream, now and to come: a graceful
// shutdown calls it, since http.Server.Shutdown waits for every request,
// and a stream never ends by itself. Their readers resume elsewhere from
// the last cursor they were sent.
func (s *Server) EndStreams() {
	if s.feed != nil {
		s.feed.Close()
	}
}

// Streams returns the number of change streams open.
func (s *Server) Streams() int {
	if s.feed == nil {
		return 0
	}
	return s.feed.Streams()
}

// changesQuery is a change feed request.
type changesQuery struct {
	after  models.ChangePosition
	limit  int
	filter models.ChangeFilter
}

func (s *Server) changes(c *gin.Context) {
	m, ok := s.moduleFor(c, models.ActionRead)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	stream := acceptsEventStream(c.GetHeader("Accept"))
	q, err := s.changesQueryOf(ctx, c, m, stream)
	if err != nil {
		s.fail(c, err)
		return
	}
	if stream {
		s.streamChanges(c, m, q)
		return
	}
	cs, err := s.store.Changes(ctx, m.TenantID, m.ID, q.after, q.limit)
	if err != nil {
		s.fail(c, err)
		return
	}
	next := q.after
	var b bytes.Buffer
	b.WriteString(`{"data":[`)
	n := 0
	for i := range cs {
		next = cs[i].Position
		e := changefeed.Entry{Change: cs[i]}
		if !e.Matches(q.filter) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		writeChangeJSON(&b, &cs[i])
	}
	b.WriteString(`],"next_cursor":"`)
	b.WriteString(next.Cursor())
	b.WriteString(`"}`)
	c.Data(http.StatusOK, "application/json; charset=utf-8", b.Bytes())
}

// writeChangeJSON writes a change as the list shows it: its cursor, then
// the members of its webhook body as stored.
func writeChangeJSON(b *bytes.Buffer, ch *models.Change) {
	b.WriteString(`{"cursor":"`)
	b.WriteString(ch.Position.Cursor())
	b.WriteByte('"')
	body := strings.TrimSpace(ch.Payload)
	if rest, ok := strings.CutPrefix(body, "{"); ok && strings.TrimSpace(rest) != "}" {
		b.WriteByte(',')
		b.WriteString(rest)
		return
	}
	b.WriteByte('}')
}

// acceptsEventStream reports whether an Accept header asks for
// text/event-stream.
func acceptsEventStream(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
			return true
		}
	}
	return false
}

// changesQueryOf reads after (or, on a stream, Last-Event-ID first),
// limit, types and the filters, and checks the position against
// retention.
func (s *Server) changesQueryOf(ctx context.Context, c *gin.Context, m *models.Module, stream bool) (changesQuery, error) {
	q := changesQuery{limit: defaultChangesLimit}
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > models.MaxChangesPage {
			return q, invalid("limit must be an integer from 1 to %d", models.MaxChangesPage)
		}
		q.limit = n
	}
	if v := c.Query("types"); v != "" {
		for t := range strings.SplitSeq(v, ",") {
			t = strings.TrimSpace(t)
			if !slices.Contains(models.ChangeTypes, t) {
				return q, invalid("types: unknown type %q; the types are %s", shortened(t), strings.Join(models.ChangeTypes, ", "))
			}
			q.filter.Types = append(q.filter.Types, t)
		}
	}
	var rq models.RecordQuery
	if err := recordFilters(m, c.Request.URL.Query(), &rq); err != nil {
		return q, err
	}
	q.filter.Fields, q.filter.Times = rq.Filters, rq.Times
	after := c.Query("after")
	if id := c.GetHeader("Last-Event-ID"); stream && id != "" {
		after = id
	}
	switch after {
	case "":
	case "latest":
		p, err := s.store.LatestChange(ctx, m.TenantID, m.ID)
		if err != nil {
			return q, err
		}
		q.after = p
	default:
		p, err := models.ParseChangeCursor(after)
		if err != nil {
			return q, err
		}
		if err := s.store.CheckChangeCursor(ctx, m.ID, p); err != nil {
			return q, err
		}
		q.after = p
	}
	return q, nil
}

// streamChanges follows the module's changes as server-sent events until
// the client leaves, the server shuts down, or the client reads too
// slowly: a write that blocks longer than the write timeout cuts it off.
// Nothing is queued for a stream; it reads the hub's ring, or the store
// when it is behind.
func (s *Server) streamChanges(c *gin.Context, m *models.Module, q changesQuery) {
	cl := callOf(c)
	sub, err := s.feed.Subscribe(m.TenantID, cl.keyID, m.ID)
	if err != nil {
		s.refuseStream(c, err)
		return
	}
	defer sub.Close()
	rc := http.NewResponseController(c.Writer)
	// The server's read timeout would end the request's context; a stream
	// reads nothing more.
	_ = rc.SetReadDeadline(time.Time{})
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	var b bytes.Buffer
	write := func() bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.changesOpts.WriteTimeout))
		_, err := c.Writer.Write(b.Bytes())
		if err == nil {
			err = rc.Flush()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.metrics.streamsCut.Inc()
		}
		b.Reset()
		return err == nil
	}
	// The headers go at once: a client waits for them before it counts
	// the stream as open.
	b.WriteString(": stream\n\n")
	if !write() {
		return
	}
	ctx := c.Request.Context()
	cur, sent := q.after, q.after
	lastWrite := time.Now()
	for {
		wait := time.Until(lastWrite.Add(s.changesOpts.Heartbeat))
		entries, err := sub.Next(ctx, cur, streamPage, max(wait, 0))
		if err != nil {
			if !errors.Is(err, changefeed.ErrClosed) && ctx.Err() == nil {
				s.log.WarnContext(ctx, "change stream ended", "request_id", requestID(c), "module_id", m.ID, "error", err)
			}
			return
		}
		for _, e := range entries {
			cur = e.Position
			if !e.Matches(q.filter) {
				continue
			}
			sent = cur
			b.WriteString("id: ")
			b.WriteString(cur.Cursor())
			b.WriteString("\nevent: ")
			b.WriteString(e.Type)
			b.WriteString("\ndata: ")
			b.WriteString(e.Payload)
			b.WriteString("\n\n")
		}
		if b.Len() == 0 && time.Since(lastWrite) >= s.changesOpts.Heartbeat {
			b.WriteString(": heartbeat\n\n")
			if sent != cur {
				// Changes the filters left out still move the reader's
				// Last-Event-ID: an id without data dispatches no event.
				sent = cur
				b.WriteString("id: " + cur.Cursor() + "\n\n")
			}
		}
		if b.Len() > 0 {
			if !write() {
				return
			}
			lastWrite = time.Now()
		}
	}
}

// refuseStream answers a stream the feed refused.
func (s *Server) refuseStream(c *gin.Context, err error) {
	var lim *changefeed.LimitError
	if errors.As(err, &lim) {
		s.metrics.rateLimited.Inc()
		c.Header("Retry-After", strconv.Itoa(streamLimitRetryAfter))
		c.AbortWithStatusJSON(http.StatusTooManyRequests, errorBody{
			Error: codeRateLimited, Message: lim.Error() + "; close one, or read the feed by pages (without Accept: text/event-stream)",
			RequestID: requestID(c), Limit: lim.Limit, RetryAfter: streamLimitRetryAfter,
		})
		return
	}
	if errors.Is(err, changefeed.ErrClosed) {
		s.fail(c, models.ErrUnavailable)
		return
	}
	s.fail(c, err)
}
