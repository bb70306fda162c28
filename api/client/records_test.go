package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
)

// notesModule makes a module with a title and a done flag, and n records
// "note 0" … "note n-1", done every third, created in that order.
func notesModule(t *testing.T, c *client.Client, n int) *client.Module {
	t.Helper()
	ctx := context.Background()
	m, err := c.CreateModule(ctx, client.ModuleInput{Slug: "notes", Name: "Notes", Fields: []client.Field{
		{Name: "title", Type: "string", Required: true}, {Name: "done", Type: "boolean"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := c.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"title": fmt.Sprintf("note %d", i), "done": i%3 == 0}}); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func titles(t *testing.T, seq func(yield func(client.Record, error) bool)) []string {
	t.Helper()
	var got []string
	for rec, err := range seq {
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, rec.Fields["title"].(string))
	}
	return got
}

// counting counts the requests sent through it.
type counting struct{ n atomic.Int64 }

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// TestRecordsIterator: the iterator reads every page once, in the sort
// asked for, with the filters, from the page asked for, and no page past
// the last; a break stops it.
func TestRecordsIterator(t *testing.T) {
	ctx := context.Background()
	sent := &counting{}
	c := newAPI(t, client.WithHTTPClient(&http.Client{Transport: sent}))
	m := notesModule(t, c, 7)
	all := []string{"note 0", "note 1", "note 2", "note 3", "note 4", "note 5", "note 6"}

	tests := []struct {
		name     string
		q        client.RecordQuery
		want     []string
		requests int64
	}{
		{"pages of 3, oldest first", client.RecordQuery{Limit: 3, Sort: client.SortOldest}, all, 3},
		{"pages of 7: one full page", client.RecordQuery{Limit: 7, Sort: client.SortOldest}, all, 1},
		{"the default sort, newest first", client.RecordQuery{Limit: 2}, []string{"note 6", "note 5", "note 4", "note 3", "note 2", "note 1", "note 0"}, 4},
		{"from page 2", client.RecordQuery{Page: 2, Limit: 3, Sort: client.SortOldest}, all[3:], 2},
		{"filtered", client.RecordQuery{Limit: 1, Sort: client.SortOldest, Filters: []client.Filter{client.Eq("done", "true")}}, []string{"note 0", "note 3", "note 6"}, 3},
		{"nothing matches", client.RecordQuery{Filters: []client.Filter{client.Eq("title", "none")}}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := sent.n.Load()
			if d := cmp.Diff(titles(t, c.Records(ctx, m.ID, tt.q)), tt.want); d != "" {
				t.Errorf("titles (-got +want):\n%s", d)
			}
			if n := sent.n.Load() - before; n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
		})
	}

	var got []string
	for rec, err := range c.Records(ctx, m.ID, client.RecordQuery{Limit: 2, Sort: client.SortOldest}) {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, rec.Fields["title"].(string)); len(got) == 3 {
			break
		}
	}
	if d := cmp.Diff(got, all[:3]); d != "" {
		t.Errorf("broken off after 3 (-got +want):\n%s", d)
	}
}

// TestRecordsIteratorError: a page the API refuses ends the walk with its
// *Error, yielded once.
func TestRecordsIteratorError(t *testing.T) {
	c := newAPI(t)
	m := notesModule(t, c, 2)
	n := 0
	for rec, err := range c.Records(context.Background(), m.ID, client.RecordQuery{Filters: []client.Filter{client.Eq("nope", "x")}}) {
		n++
		var e *client.Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != "invalid_request" || rec.ID != "" {
			t.Errorf("yielded %+v, %v; want a zero record and a 400 *Error", rec, err)
		}
	}
	if n != 1 {
		t.Errorf("yielded %d times, want once", n)
	}
}

// TestQueryRecordsParams: the query sends what was set and only that, a
// filter with an operator in its bracket form.
func TestQueryRecordsParams(t *testing.T) {
	var got url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query()
		w.Write([]byte(`{"data":[],"total":0,"page":1,"limit":20}`))
	}))
	defer srv.Close()
	c := client.New(srv.URL, "k")
	ctx := context.Background()
	if _, err := c.QueryRecords(ctx, "mod_1", client.RecordQuery{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("the zero query sent %v, want nothing", got)
	}
	q := client.RecordQuery{Page: 2, Limit: 5, Sort: client.SortRecentlyUpdated, Filters: []client.Filter{
		client.Eq("status", "open"), {Field: "amount", Op: "gte", Value: "10"},
	}}
	if _, err := c.QueryRecords(ctx, "mod_1", q); err != nil {
		t.Fatal(err)
	}
	want := url.Values{"page": {"2"}, "limit": {"5"}, "sort": {"-updated_at"}, "filter[status]": {"open"}, "filter[amount][gte]": {"10"}}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("query (-got +want):\n%s", d)
	}
}

// TestUpdateAndDeleteRecord: a merge patch changes what it names and
// removes what it sets to nil; If-Match refuses a stale version; a
// deleted record is gone.
func TestUpdateAndDeleteRecord(t *testing.T) {
	ctx := context.Background()
	c := newAPI(t)
	m := notesModule(t, c, 0)
	rec, err := c.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"title": "a", "done": false}, CustomData: map[string]any{"tag": "x", "n": 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := c.UpdateRecord(ctx, m.ID, rec.ID, client.RecordPatch{Fields: map[string]any{"done": true}, CustomData: map[string]any{"tag": nil}, IfMatch: rec.Version})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(up.Fields, map[string]any{"title": "a", "done": true}); d != "" || up.Version != 2 {
		t.Errorf("patched to version %d, fields (-got +want):\n%s", up.Version, d)
	}
	if d := cmp.Diff(up.CustomData, map[string]any{"n": 1.0}); d != "" {
		t.Errorf("custom data (-got +want):\n%s", d)
	}

	_, err = c.UpdateRecord(ctx, m.ID, rec.ID, client.RecordPatch{Fields: map[string]any{"title": "b"}, IfMatch: rec.Version})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusPreconditionFailed || e.Code != "precondition_failed" {
		t.Errorf("patch of version 1 at version 2: %v, want 412 precondition_failed", err)
	}

	if err := c.DeleteRecord(ctx, m.ID, rec.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetRecord(ctx, m.ID, rec.ID)
	if !errors.As(err, &e) || e.Code != "not_found" {
		t.Errorf("get after delete: %v, want not_found", err)
	}
	if err := c.DeleteRecord(ctx, m.ID, rec.ID); !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Errorf("second delete: %v, want a 404", err)
	}
}
