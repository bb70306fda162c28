package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// changesModule creates a module with a title and a quantity.
func changesModule(t *testing.T, c *client.Client, slug string) string {
	t.Helper()
	m, err := c.CreateModule(context.Background(), client.ModuleInput{
		Slug: slug, Name: slug, Fields: []client.Field{{Name: "title", Type: "string"}, {Name: "qty", Type: "integer"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func changeTitles(cs []client.Change) []string {
	var out []string
	for _, ch := range cs {
		out = append(out, fmt.Sprintf("%s %v", ch.Event, ch.Record.Fields["title"]))
	}
	return out
}

// TestChanges: a page, the walk over pages to the end, types and an
// operator filter; a page's changes carry their cursors.
func TestChanges(t *testing.T) {
	ctx := context.Background()
	c := newAPI(t)
	mod := changesModule(t, c, "orders")
	for i := range 5 {
		if _, err := c.CreateRecord(ctx, mod, client.RecordInput{Fields: map[string]any{"title": fmt.Sprint(i), "qty": i}}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := c.Changes(ctx, mod, client.ChangesQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := changeTitles(first.Data); !slices.Equal(got, []string{"record_created 0", "record_created 1"}) || first.NextCursor != first.Data[1].Cursor {
		t.Errorf("first page %q, next %q", got, first.NextCursor)
	}
	var all []client.Change
	for ch, err := range c.AllChanges(ctx, mod, client.ChangesQuery{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ch)
	}
	if len(all) != 5 || all[4].Record.Fields["title"] != "4" || len(all[4].Body) == 0 {
		t.Errorf("the walk: %q", changeTitles(all))
	}
	var big []client.Change
	q := client.ChangesQuery{Types: []string{"record_created"}, Filters: []client.Filter{{Field: "qty", Op: "gte", Value: "3"}}}
	for ch, err := range c.AllChanges(ctx, mod, q) {
		if err != nil {
			t.Fatal(err)
		}
		big = append(big, ch)
	}
	if got := changeTitles(big); !slices.Equal(got, []string{"record_created 3", "record_created 4"}) {
		t.Errorf("qty >= 3: %q", got)
	}
	end, err := c.Changes(ctx, mod, client.ChangesQuery{After: client.Latest})
	if err != nil || len(end.Data) != 0 || end.NextCursor != all[4].Cursor {
		t.Errorf("latest: %+v, %v; want no data and the last cursor", end, err)
	}
	_, err = c.Changes(ctx, mod, client.ChangesQuery{Types: []string{"nope"}})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "invalid_request" {
		t.Errorf("an unknown type: %v, want invalid_request", err)
	}
}

// cuttable is the real API behind a handler that answers the first
// stream 429 with Retry-After, and records each stream's Last-Event-ID.
type cuttable struct {
	next http.Handler
	mu   sync.Mutex
	seen []string // Last-Event-ID of each stream asked for, "-" for the 429
}

func (h *cuttable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Accept") == "text/event-stream" {
		h.mu.Lock()
		first := len(h.seen) == 0
		if first {
			h.seen = append(h.seen, "-")
		} else {
			h.seen = append(h.seen, r.Header.Get("Last-Event-ID"))
		}
		h.mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":"rate_limited","message":"too many streams","request_id":"req_x","limit":1,"retry_after":1}`)
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

func (h *cuttable) streams() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// TestFollowChangesResumes: FollowChanges waits out a 429, follows the
// stream, and when the connection is cut resumes after the last change it
// got: every change once, in order, none lost to the cut.
func TestFollowChangesResumes(t *testing.T) {
	store := storetest.Open(t, models.SQLite)
	_, _, key, err := store.CreateTenant(context.Background(), "acme", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	h := &cuttable{next: handler(store)}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, key)
	mod := changesModule(t, c, "orders")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan client.Change, 100)
	done := make(chan error, 1)
	var reconnects []error
	go func() {
		opts := client.FollowOptions{After: client.Latest, OnReconnect: func(err error, _ time.Duration) { reconnects = append(reconnects, err) }}
		for ch, err := range c.FollowChanges(ctx, mod, opts) {
			if err != nil {
				done <- err
				return
			}
			got <- ch
		}
		done <- nil
	}()
	storetest.Eventually(t, 10*time.Second, "the stream opened after the 429", func() bool { return len(h.streams()) == 2 })
	// Writes go on connections of their own, which the cut leaves alone.
	writer := client.New(srv.URL, key, client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
	create := func(title string) {
		if _, err := writer.CreateRecord(context.Background(), mod, client.RecordInput{Fields: map[string]any{"title": title}}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(n int) []client.Change {
		var out []client.Change
		for range n {
			select {
			case ch := <-got:
				out = append(out, ch)
			case err := <-done:
				t.Fatalf("the follow ended: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatalf("%d changes of %d within 10s", len(out), n)
			}
		}
		return out
	}
	create("a")
	create("b")
	before := receive(2)
	srv.CloseClientConnections()
	create("c")
	create("d")
	after := receive(2)
	all := append(before, after...)
	if got := changeTitles(all); !slices.Equal(got, []string{"record_created a", "record_created b", "record_created c", "record_created d"}) {
		t.Errorf("followed %q", got)
	}
	streams := h.streams()
	if len(streams) < 3 || !slices.Contains(streams[2:], before[1].Cursor) {
		t.Errorf("streams asked for with Last-Event-ID %q; want a resume after %q", streams, before[1].Cursor)
	}
	select {
	case ch := <-got:
		t.Errorf("a change more than made: %s %v", ch.Event, ch.Record.Fields["title"])
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the follow ended with %v, want nothing once ctx ended", err)
	}
	if len(reconnects) < 2 {
		t.Errorf("reconnected %d times, want after the 429 and after the cut", len(reconnects))
	}
}

// TestFollowChangesRefused: an answer that retrying cannot change ends the
// follow with the API's error.
func TestFollowChangesRefused(t *testing.T) {
	c := newAPI(t)
	mod := changesModule(t, c, "orders")
	for _, err := range c.FollowChanges(context.Background(), mod, client.FollowOptions{After: "bm9wZQ"}) {
		var e *client.Error
		if !errors.As(err, &e) || e.Code != "invalid_request" {
			t.Errorf("a bad cursor: %v, want invalid_request", err)
		}
		return
	}
	t.Error("the follow ended without an error")
}
