package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Latest is the cursor of the change feed's end: ChangesQuery.After and
// FollowOptions.After start there.
const Latest = "latest"

// Change is one change of a module's change feed: its cursor and the
// members of its event's webhook body.
type Change struct {
	// Cursor is opaque: pass it as After to read on after this change.
	Cursor     string       `json:"cursor"`
	ID         string       `json:"id"`
	Event      string       `json:"event"`
	OccurredAt time.Time    `json:"occurred_at"`
	TenantID   string       `json:"tenant_id"`
	Module     ChangeModule `json:"module"`
	// Record is the record after the change; before it for
	// record_deleted.
	Record  Record         `json:"record"`
	Changes map[string]any `json:"changes"`
	// Status is a status_change's alone.
	Status *StatusMovement `json:"status,omitempty"`
	// Body is the event's webhook body as sent, the same bytes a delivery
	// of the event sends (FollowChanges), or the change as the page held
	// it, with its cursor (Changes).
	Body json.RawMessage `json:"-"`
}

// ChangeModule names the module of a change.
type ChangeModule struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
}

// StatusMovement is the status field a status_change moved.
type StatusMovement struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// ChangePage is one page of a module's change feed.
type ChangePage struct {
	Data []Change `json:"data"`
	// NextCursor is where the next page starts; at the end it is the
	// After that was asked for.
	NextCursor string `json:"next_cursor"`
}

// ChangesQuery selects a page of a module's change feed.
type ChangesQuery struct {
	// After is a cursor the feed answered, or Latest; "" starts at the
	// oldest change kept.
	After string
	// Limit is how many changes are examined, 1 to 1000; 0 is the API's
	// default, 100.
	Limit int
	// Types keeps only these event types; none keeps every type.
	Types []string
	// Filters must all hold on the record a change shows.
	Filters []Filter
}

func (q ChangesQuery) values() url.Values {
	v := url.Values{}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if len(q.Types) > 0 {
		v.Set("types", strings.Join(q.Types, ","))
	}
	for _, f := range q.Filters {
		v.Add(f.param(), f.Value)
	}
	return v
}

func changesPath(moduleID string) string { return "/api/modules/" + escape(moduleID) + "/changes" }

// Changes reads the page of a module's change feed that q selects. A
// cursor older than the feed keeps answers an *Error with Code
// "cursor_expired".
func (c *Client) Changes(ctx context.Context, moduleID string, q ChangesQuery) (*ChangePage, error) {
	var raw struct {
		Data       []json.RawMessage `json:"data"`
		NextCursor string            `json:"next_cursor"`
	}
	if _, err := c.do(ctx, http.MethodGet, withQuery(changesPath(moduleID), q.values()), nil, &raw); err != nil {
		return nil, err
	}
	p := &ChangePage{Data: make([]Change, len(raw.Data)), NextCursor: raw.NextCursor}
	for i, b := range raw.Data {
		if err := json.Unmarshal(b, &p.Data[i]); err != nil {
			return nil, fmt.Errorf("changes: decode change: %w", err)
		}
		p.Data[i].Body = b
	}
	return p, nil
}

// AllChanges yields the changes q selects, from q.After on, page after
// page until the feed's end, and stops at the first error, which it yields
// with a zero Change. Each change's Cursor resumes after it.
func (c *Client) AllChanges(ctx context.Context, moduleID string, q ChangesQuery) iter.Seq2[Change, error] {
	return func(yield func(Change, error) bool) {
		pq := q
		for {
			p, err := c.Changes(ctx, moduleID, pq)
			if err != nil {
				yield(Change{}, err)
				return
			}
			for _, ch := range p.Data {
				if !yield(ch, nil) {
					return
				}
			}
			if p.NextCursor == "" || p.NextCursor == pq.After {
				return
			}
			pq.After = p.NextCursor
		}
	}
}

// FollowOptions tune FollowChanges.
type FollowOptions struct {
	// After is where to start: a cursor, Latest, or "" for the oldest
	// change kept.
	After string
	// Types and Filters select changes as ChangesQuery's do.
	Types   []string
	Filters []Filter
	// IdleTimeout is how long a stream may stay silent before it is taken
	// for dead and opened again; DefaultFollowIdle when zero. The server
	// sends a heartbeat after 15 s of silence.
	IdleTimeout time.Duration
	// MaxBackoff caps the wait between attempts to open the stream again;
	// DefaultFollowBackoff when zero. A 429's or 503's Retry-After is
	// waited in full.
	MaxBackoff time.Duration
	// OnReconnect, when set, is called before each wait to open the
	// stream again, with why and how long the wait is.
	OnReconnect func(err error, wait time.Duration)
}

// Defaults of FollowOptions.
const (
	DefaultFollowIdle    = 45 * time.Second
	DefaultFollowBackoff = 10 * time.Second
)

// FollowChanges follows a module's change feed live, as server-sent
// events, and yields each change the options select, in commit order,
// once. It resumes by itself after a disconnect, a server's shutdown or a
// silent stream: it opens the stream again after the last change received
// (Last-Event-ID), waiting a doubling backoff, or a 429's or 503's
// Retry-After. It ends when ctx ends, yielding nothing more, or at an
// answer that does not change by retrying (400, 401, 403, 404, 410
// cursor_expired: start over), which it yields as an *Error with a zero
// Change. Range over it with two variables:
//
//	for ch, err := range c.FollowChanges(ctx, moduleID, client.FollowOptions{After: client.Latest}) {
//		if err != nil {
//			return err
//		}
//		…
//	}
//
// The stream is not bounded by the client's timeout; FollowOptions bound
// its silence instead. Change.Body is the event's webhook body, without a
// cursor.
func (c *Client) FollowChanges(ctx context.Context, moduleID string, opts FollowOptions) iter.Seq2[Change, error] {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultFollowIdle
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultFollowBackoff
	}
	// The same transport, without the client's timeout, which would cut
	// every stream.
	hc := &http.Client{Transport: c.http.Transport, CheckRedirect: c.http.CheckRedirect, Jar: c.http.Jar}
	return func(yield func(Change, error) bool) {
		f := follower{c: c, hc: hc, moduleID: moduleID, opts: opts, last: opts.After}
		backoff := firstBackoff
		for ctx.Err() == nil {
			got, stop, err := f.stream(ctx, yield)
			if stop {
				return
			}
			if ctx.Err() != nil {
				return
			}
			var e *Error
			wait := backoff
			switch {
			case errors.As(err, &e) && (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable):
				if e.RetryAfter > 0 {
					wait = e.RetryAfter
				}
			case errors.As(err, &e) && !Transient(e):
				yield(Change{}, err)
				return
			}
			if got {
				// The stream worked: a disconnect is news, not a trend.
				backoff, wait = firstBackoff, min(wait, firstBackoff)
			} else {
				backoff = min(2*backoff, opts.MaxBackoff)
			}
			if opts.OnReconnect != nil {
				opts.OnReconnect(err, wait)
			}
			if sleep(ctx, wait) != nil {
				return
			}
		}
	}
}

// follower is one FollowChanges: where it is in the feed.
type follower struct {
	c        *Client
	hc       *http.Client
	moduleID string
	opts     FollowOptions
	// last is the cursor of the last change received (or the start).
	last string
}

// stream opens the stream once and yields its changes until it ends. got
// reports whether it opened; stop that the caller's loop stopped.
func (f *follower) stream(ctx context.Context, yield func(Change, error) bool) (got, stop bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := ChangesQuery{After: f.last, Types: f.opts.Types, Filters: f.opts.Filters}
	target := f.c.URL(withQuery(changesPath(f.moduleID), q.values()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return false, false, err
	}
	req.Header.Set("Authorization", "Bearer "+f.c.key)
	req.Header.Set("Accept", "text/event-stream")
	if f.last != "" && f.last != Latest {
		req.Header.Set("Last-Event-ID", f.last)
	}
	res, err := f.hc.Do(req)
	if err != nil {
		return false, false, &TransportError{Method: http.MethodGet, URL: target, Err: err}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
		return false, false, newError(res, b, time.Now())
	}
	// A silent stream is dead: its body is closed after IdleTimeout
	// without a byte.
	idle := time.AfterFunc(f.opts.IdleTimeout, cancel)
	defer idle.Stop()
	r := &eventReader{r: bufio.NewReaderSize(res.Body, 64<<10)}
	for {
		ev, err := r.next(func() { idle.Reset(f.opts.IdleTimeout) })
		if err != nil {
			return true, false, &TransportError{Method: http.MethodGet, URL: target, Err: fmt.Errorf("stream: %w", err)}
		}
		if ev.data == "" {
			if ev.id != "" {
				f.last = ev.id
			}
			continue
		}
		var ch Change
		if err := json.Unmarshal([]byte(ev.data), &ch); err != nil {
			return true, false, fmt.Errorf("follow changes: decode change: %w", err)
		}
		ch.Cursor, ch.Body = ev.id, json.RawMessage(ev.data)
		if ev.id != "" {
			f.last = ev.id
		}
		if !yield(ch, nil) {
			return true, true, nil
		}
	}
}

// sseEvent is one event of a text/event-stream.
type sseEvent struct {
	id, typ, data string
}

// eventReader reads a text/event-stream (the WHATWG HTML standard's
// rules): comments are skipped, data lines joined, and an event with an id
// and no data is returned too, as it moves the last event id.
type eventReader struct {
	r *bufio.Reader
}

// next returns the next event; read is called whenever bytes arrive.
func (e *eventReader) next(read func()) (sseEvent, error) {
	var (
		ev      sseEvent
		data    []string
		hasData bool
		hasID   bool
	)
	for {
		line, err := e.line()
		if err != nil {
			return ev, err
		}
		read()
		if len(line) == 0 {
			if hasData || hasID {
				ev.data = strings.Join(data, "\n")
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "id":
			if !bytes.ContainsRune(value, 0) {
				ev.id, hasID = string(value), true
			}
		case "event":
			ev.typ = string(value)
		case "data":
			data, hasData = append(data, string(value)), true
		}
	}
}

// line reads one line, without its end (\n or \r\n), of at most
// maxAnswer bytes.
func (e *eventReader) line() ([]byte, error) {
	var out []byte
	for {
		chunk, err := e.r.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > maxAnswer {
			return nil, errors.New("an event line is over the client's bound")
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = bytes.TrimSuffix(out, []byte("\n"))
		out = bytes.TrimSuffix(out, []byte("\r"))
		return out, nil
	}
}
