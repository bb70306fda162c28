package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RecordInput is a record to create: its fields, which the module's
// schema checks, and custom data, which it does not.
type RecordInput struct {
	Fields     map[string]any `json:"fields"`
	CustomData map[string]any `json:"custom_data,omitempty"`
}

// RecordPatch is a change of a record, each part a JSON merge patch (RFC
// 7396) of what is stored: a member set to nil is removed, an object is
// merged, anything else replaces; a nil map leaves its part alone.
type RecordPatch struct {
	Fields     map[string]any `json:"fields,omitempty"`
	CustomData map[string]any `json:"custom_data,omitempty"`
	// IfMatch, when not 0, makes the change conditional: the API applies it
	// only to the record at that version (its ETag), and answers 412
	// precondition_failed otherwise. It is sent as If-Match, not in the
	// body.
	IfMatch int64 `json:"-"`
}

// Record is a record as the API shows it.
type Record struct {
	ID         string         `json:"id"`
	ModuleID   string         `json:"module_id"`
	Fields     map[string]any `json:"fields"`
	CustomData map[string]any `json:"custom_data"`
	Version    int64          `json:"version"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

// RecordPage is one page of a module's records.
type RecordPage = Page[Record]

// Sorts of the records list; SortNewest is the API's default.
const (
	SortNewest          = "-created_at"
	SortOldest          = "created_at"
	SortRecentlyUpdated = "-updated_at"
	SortLeastUpdated    = "updated_at"
)

// Filter is one condition of a records list, sent as
// filter[<Field>]=<Value> when Op is empty (the field equals the value,
// read by the field's type: "true", "42", "2026-01-02T03:04:05Z") and as
// filter[<Field>][<Op>]=<Value> otherwise, for a server that takes
// operators (see api/openapi.yaml: one that does not answers 400).
type Filter struct {
	Field string
	Op    string
	Value string
}

// Eq is the condition that field equals value.
func Eq(field, value string) Filter { return Filter{Field: field, Value: value} }

func (f Filter) param() string {
	if f.Op == "" {
		return "filter[" + f.Field + "]"
	}
	return "filter[" + f.Field + "][" + f.Op + "]"
}

// RecordQuery selects a page of a module's records; its zero value is the
// API's first page, newest first.
type RecordQuery struct {
	// Page counts from 1; 0 is the first.
	Page int
	// Limit is the page size, 1 to 100; 0 is the API's default, 20.
	Limit int
	// Sort is one of the Sort constants; "" is SortNewest.
	Sort string
	// Filters must all hold.
	Filters []Filter
}

func (q RecordQuery) values() url.Values {
	v := url.Values{}
	setPage(v, q.Page, q.Limit)
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	for _, f := range q.Filters {
		v.Add(f.param(), f.Value)
	}
	return v
}

func recordsPath(moduleID string) string { return "/api/modules/" + escape(moduleID) + "/records" }

func recordPath(moduleID, recordID string) string {
	return recordsPath(moduleID) + "/" + escape(recordID)
}

// CreateRecord creates a record in a module.
func (c *Client) CreateRecord(ctx context.Context, moduleID string, in RecordInput) (*Record, error) {
	var r Record
	if _, err := c.do(ctx, http.MethodPost, recordsPath(moduleID), in, &r); err != nil {
		return nil, err
	}
	if r.ID == "" {
		return nil, errors.New("create record: the API answered without an id")
	}
	return &r, nil
}

// GetRecord reads one record of a module.
func (c *Client) GetRecord(ctx context.Context, moduleID, recordID string) (*Record, error) {
	var r Record
	if _, err := c.do(ctx, http.MethodGet, recordPath(moduleID, recordID), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// UpdateRecord changes a record by the merge patch p and answers it as it
// is after the change (at the same version when p changed nothing). With
// p.IfMatch set, a record at another version is left alone and the answer
// is an *Error with Code "precondition_failed".
func (c *Client) UpdateRecord(ctx context.Context, moduleID, recordID string, p RecordPatch) (*Record, error) {
	r := request{method: http.MethodPatch, path: recordPath(moduleID, recordID), in: p}
	if p.IfMatch != 0 {
		r.header = http.Header{"If-Match": {strconv.Quote(strconv.FormatInt(p.IfMatch, 10))}}
	}
	var rec Record
	if _, err := c.call(ctx, r, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// DeleteRecord deletes a record; a record already deleted answers an
// *Error with Code "not_found".
func (c *Client) DeleteRecord(ctx context.Context, moduleID, recordID string) error {
	_, err := c.do(ctx, http.MethodDelete, recordPath(moduleID, recordID), nil, nil)
	return err
}

// ListRecords reads page (from 1) of a module's records, limit a page,
// newest first: QueryRecords with only a page and a limit.
func (c *Client) ListRecords(ctx context.Context, moduleID string, page, limit int) (*RecordPage, error) {
	return c.QueryRecords(ctx, moduleID, RecordQuery{Page: page, Limit: limit})
}

// QueryRecords reads the page of a module's records that q selects.
func (c *Client) QueryRecords(ctx context.Context, moduleID string, q RecordQuery) (*RecordPage, error) {
	var p RecordPage
	if _, err := c.do(ctx, http.MethodGet, withQuery(recordsPath(moduleID), q.values()), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Records yields the records q selects, from q.Page on, page after page
// until the last, and stops at the first error, which it yields with a
// zero Record:
//
//	for rec, err := range c.Records(ctx, moduleID, client.RecordQuery{Sort: client.SortOldest}) {
//		if err != nil {
//			return err
//		}
//		…
//	}
//
// The list pages by number, so a record written or deleted during the walk
// may shift the later pages: one may be seen twice or not at all. Sorted
// by SortOldest, records created during the walk come last and every
// record older than the walk is seen once, unless one is deleted meanwhile.
func (c *Client) Records(ctx context.Context, moduleID string, q RecordQuery) iter.Seq2[Record, error] {
	return walkPages(ctx, q.Page, func(ctx context.Context, page int) (*RecordPage, error) {
		pq := q
		pq.Page = page
		return c.QueryRecords(ctx, moduleID, pq)
	})
}
