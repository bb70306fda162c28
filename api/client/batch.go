package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// MaxBatchOps is the most operations one batch may hold.
const MaxBatchOps = 100

// BatchOp is one record write of a batch, as its route takes it; build it
// with CreateOp, UpdateOp or DeleteOp.
type BatchOp struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Body    any               `json:"body,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// CreateOp creates a record in a module, as CreateRecord does.
func CreateOp(moduleID string, in RecordInput) BatchOp {
	return BatchOp{Method: http.MethodPost, URL: recordsPath(moduleID), Body: in}
}

// UpdateOp changes a record by a merge patch, as UpdateRecord does,
// conditionally when p.IfMatch is set.
func UpdateOp(moduleID, recordID string, p RecordPatch) BatchOp {
	op := BatchOp{Method: http.MethodPatch, URL: recordPath(moduleID, recordID), Body: p}
	if p.IfMatch != 0 {
		op.Headers = map[string]string{"If-Match": strconv.Quote(strconv.FormatInt(p.IfMatch, 10))}
	}
	return op
}

// DeleteOp deletes a record, as DeleteRecord does.
func DeleteOp(moduleID, recordID string) BatchOp {
	return BatchOp{Method: http.MethodDelete, URL: recordPath(moduleID, recordID)}
}

// BatchResult is what an operation's route would have answered.
type BatchResult struct {
	// Status is 201 for a create, 200 for a change or a delete.
	Status int
	// ETag is the record's version as an entity tag, Location the path of
	// a created record; empty when the route answers none.
	ETag, Location string
	// Record is the record as created or changed; nil for a delete.
	Record *Record
	// Deleted is the id of the record a delete deleted.
	Deleted string
}

// batchItem is a BatchResult on the wire.
type batchItem struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// Batch applies ops, 1 to MaxBatchOps record writes in any of the key's
// modules, in one transaction: all of them, in order, or none. It answers
// one result per operation, in order. When an operation fails, nothing is
// applied and the error is an *Error whose Index names the operation; a
// batch refused as a whole (too many operations, the rate limit) has no
// Index. Each operation counts against the key's rate limit, beside the
// call itself.
//
// A batch is one write: with WithIdempotencyKeys or IdempotencyKey it
// carries one Idempotency-Key, sent again on each of its retries.
func (c *Client) Batch(ctx context.Context, ops []BatchOp) ([]BatchResult, error) {
	var items []batchItem
	if _, err := c.do(ctx, http.MethodPost, "/api/batch", map[string][]BatchOp{"requests": ops}, &items); err != nil {
		return nil, err
	}
	if len(items) != len(ops) {
		return nil, fmt.Errorf("batch: %d results for %d operations", len(items), len(ops))
	}
	out := make([]BatchResult, len(items))
	for i, it := range items {
		r := BatchResult{Status: it.Status, ETag: it.Headers["ETag"], Location: it.Headers["Location"]}
		if ops[i].Method == http.MethodDelete {
			var d struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(it.Body, &d); err != nil {
				return nil, fmt.Errorf("batch: decode result %d: %w", i, err)
			}
			r.Deleted = d.ID
		} else if len(bytes.TrimSpace(it.Body)) > 0 {
			r.Record = &Record{}
			if err := json.Unmarshal(it.Body, r.Record); err != nil {
				return nil, fmt.Errorf("batch: decode result %d: %w", i, err)
			}
		}
		out[i] = r
	}
	return out, nil
}
