package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestBatch: a batch's results come back in order, each as its route
// answers; a failing operation's error names it, and nothing is applied.
func TestBatch(t *testing.T) {
	ctx := context.Background()
	c := newAPI(t)
	m := notesModule(t, c, 2)
	page, err := c.QueryRecords(ctx, m.ID, client.RecordQuery{Sort: client.SortOldest})
	if err != nil {
		t.Fatal(err)
	}
	first, second := page.Data[0], page.Data[1]

	res, err := c.Batch(ctx, []client.BatchOp{
		client.CreateOp(m.ID, client.RecordInput{Fields: map[string]any{"title": "new"}}),
		client.UpdateOp(m.ID, first.ID, client.RecordPatch{Fields: map[string]any{"done": false}, IfMatch: first.Version}),
		client.DeleteOp(m.ID, second.ID),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Record == nil || res[1].Record == nil {
		t.Fatalf("results %+v, want a created and a changed record and a delete", res)
	}
	got := []any{res[0].Status, res[0].ETag, res[0].Location, res[0].Record.Fields["title"],
		res[1].Status, res[1].ETag, res[1].Record.Fields["done"], res[2].Status, res[2].Deleted, res[2].Record}
	want := []any{201, `"1"`, "/api/modules/" + m.ID + "/records/" + res[0].Record.ID, "new",
		200, `"2"`, false, 200, second.ID, (*client.Record)(nil)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}

	_, err = c.Batch(ctx, []client.BatchOp{
		client.CreateOp(m.ID, client.RecordInput{Fields: map[string]any{"title": "not kept"}}),
		client.UpdateOp(m.ID, first.ID, client.RecordPatch{Fields: map[string]any{"done": true}, IfMatch: first.Version}),
	})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Code != "precondition_failed" || apiErr.Index == nil || *apiErr.Index != 1 {
		t.Fatalf("batch with a stale If-Match at 1: %v (%+v), want precondition_failed with Index 1", err, apiErr)
	}
	if !strings.HasPrefix(apiErr.Summary(), "operation 1: precondition_failed: ") {
		t.Errorf("Summary %q, want it to name operation 1 first", apiErr.Summary())
	}
	page, err = c.QueryRecords(ctx, m.ID, client.RecordQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 2 {
		t.Errorf("%d records after a refused batch, want 2: its create was applied", page.Total)
	}

	_, err = c.Batch(ctx, nil)
	if !errors.As(err, &apiErr) || apiErr.Code != "invalid_request" || apiErr.Index != nil {
		t.Errorf("empty batch: %v, want invalid_request without an Index", err)
	}
}

// TestBatchRetriedWithOneKey: a batch is one write: retried after a 503,
// it carries the same Idempotency-Key, and is applied once.
func TestBatchRetriedWithOneKey(t *testing.T) {
	ctx := context.Background()
	store := storetest.Open(t, models.SQLite)
	_, _, adminKey, err := store.CreateTenant(ctx, "acme", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	s := &seen{}
	api := handler(store)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/batch" && s.add(r) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":"unavailable","message":"the database cannot be reached; retry later","request_id":"req_1"}`)
			return
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, adminKey, client.WithRetries(1), client.WithIdempotencyKeys(), client.WithMaxRetryWait(10*time.Millisecond))
	m := notesModule(t, c, 0)
	res, err := c.Batch(ctx, []client.BatchOp{
		client.CreateOp(m.ID, client.RecordInput{Fields: map[string]any{"title": "a"}}),
		client.CreateOp(m.ID, client.RecordInput{Fields: map[string]any{"title": "b"}}),
	})
	if err != nil {
		t.Fatalf("batch: %v, want the second try's answer", err)
	}
	reqs, keys := s.got()
	if diff := cmp.Diff([]string{http.MethodPost, http.MethodPost}, reqs); diff != "" || len(keys) != 2 || !uuid.MatchString(keys[0]) || keys[1] != keys[0] {
		t.Errorf("batch requests %v with Idempotency-Keys %q, want two POSTs with one UUID", reqs, keys)
	}
	page, err := c.QueryRecords(ctx, m.ID, client.RecordQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || page.Total != 2 {
		t.Errorf("%d results, %d records; want 2 of each", len(res), page.Total)
	}
}
