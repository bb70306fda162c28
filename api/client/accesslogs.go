package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AccessLog is one logged call of the API.
type AccessLog struct {
	ID       string  `json:"id"`
	TenantID *string `json:"tenant_id"`
	KeyID    *string `json:"key_id"`
	Method   string  `json:"method"`
	Path     string  `json:"path"`
	// Route is the route pattern that served the call, or "unmatched".
	Route      string    `json:"route"`
	ModuleID   *string   `json:"module_id"`
	Status     int       `json:"status"`
	DurationMS float64   `json:"duration_ms"`
	IP         string    `json:"ip"`
	UserAgent  string    `json:"user_agent"`
	RequestID  string    `json:"request_id"`
	CreatedAt  time.Time `json:"created_at"`
}

// AccessLogQuery selects a page of the tenant's access logs, newest
// first: after Cursor (a CursorPage's NextCursor) or at Page (from 1, the
// first 10,000 rows only), never both. Zero members select nothing.
type AccessLogQuery struct {
	Page   int
	Cursor string
	// Limit is the page size, 1 to 100; 0 is the API's default, 20.
	Limit  int
	KeyID  string
	Status int
	Method string
	// From is inclusive, To exclusive, on the call's arrival.
	From, To time.Time
}

func (q AccessLogQuery) values() url.Values {
	v := url.Values{}
	setPage(v, q.Page, q.Limit)
	setString(v, "cursor", q.Cursor)
	setString(v, "key_id", q.KeyID)
	if q.Status != 0 {
		v.Set("status", strconv.Itoa(q.Status))
	}
	setString(v, "method", q.Method)
	setTime(v, "from", q.From)
	setTime(v, "to", q.To)
	return v
}

// setString adds s to q as name unless it is empty.
func setString(q url.Values, name, s string) {
	if s != "" {
		q.Set(name, s)
	}
}

const accessLogsPath = "/api/admin/access-logs"

// ListAccessLogs reads the page of access logs q selects (an admin route).
func (c *Client) ListAccessLogs(ctx context.Context, q AccessLogQuery) (*CursorPage[AccessLog], error) {
	var p CursorPage[AccessLog]
	if _, err := c.do(ctx, http.MethodGet, withQuery(accessLogsPath, q.values()), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// AccessLogs yields the access logs q selects, following next_cursor from
// q's first page to the last, and stops at the first error, which it
// yields with a zero AccessLog. Calls logged during the walk are newer
// than it and not in it.
func (c *Client) AccessLogs(ctx context.Context, q AccessLogQuery) iter.Seq2[AccessLog, error] {
	return walkCursor(ctx, func(ctx context.Context, cursor string) (*CursorPage[AccessLog], error) {
		pq := q // each walk of the iterator starts from q
		if cursor != "" {
			pq.Page, pq.Cursor = 0, cursor
		}
		return c.ListAccessLogs(ctx, pq)
	})
}
