package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/models/storetest"
)

// seen is what a test server got: each request's method and
// Idempotency-Key, in order.
type seen struct {
	mu   sync.Mutex
	reqs []string
	keys []string
}

func (s *seen) add(r *http.Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r.Method)
	s.keys = append(s.keys, r.Header.Get(client.IdempotencyKeyHeader))
	return len(s.reqs)
}

func (s *seen) got() (reqs, keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...), append([]string(nil), s.keys...)
}

// unavailableOnce answers the first request 503 with Retry-After: after,
// then a created record.
func unavailableOnce(t *testing.T, after string) (*httptest.Server, *seen) {
	t.Helper()
	return failOnce(t, http.StatusServiceUnavailable, `{"error":"unavailable","message":"the database cannot be reached; retry later","request_id":"req_1"}`, after)
}

// failOnce answers the first request status with body and Retry-After:
// after (none when empty), then a created record.
func failOnce(t *testing.T, status int, body, after string) (*httptest.Server, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if s.add(r) == 1 {
			if after != "" {
				w.Header().Set("Retry-After", after)
			}
			w.WriteHeader(status)
			w.Write([]byte(body))
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"rec_1","module_id":"mod_1","fields":{},"custom_data":{},"version":1}`))
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

// uuid matches the keys the client makes: UUIDs of version 7.
var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestIdempotencyKeysInOrder: the keys the client makes are new for each
// write and sort in the order they were made, so that the server files
// each beside the last.
func TestIdempotencyKeysInOrder(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get(client.IdempotencyKeyHeader))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"rec_1","module_id":"mod_1","fields":{},"custom_data":{},"version":1}`))
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "k", client.WithIdempotencyKeys())
	for range 200 {
		if _, err := c.CreateRecord(context.Background(), "mod_1", client.RecordInput{Fields: map[string]any{"title": "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range keys {
		if !uuid.MatchString(k) {
			t.Fatalf("key %d %q, want a UUID of version 7", i, k)
		}
		if i > 0 && k <= keys[i-1] {
			t.Fatalf("key %d %q sorts before or with key %d %q, want each after the last", i, k, i-1, keys[i-1])
		}
	}
}

// TestRetryWithIdempotencyKey: a POST that carries a key is sent again
// after a 503, once its Retry-After has passed, with the same key.
func TestRetryWithIdempotencyKey(t *testing.T) {
	srv, s := unavailableOnce(t, "1")
	c := client.New(srv.URL, "k", client.WithRetries(2), client.WithIdempotencyKeys())
	start := time.Now()
	rec, err := c.CreateRecord(context.Background(), "mod_1", client.RecordInput{Fields: map[string]any{"title": "x"}})
	if err != nil {
		t.Fatalf("create: %v, want the second answer", err)
	}
	if rec.ID != "rec_1" {
		t.Errorf("record %+v, want rec_1", rec)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("retried after %v, want Retry-After's 1s", waited)
	}
	reqs, keys := s.got()
	if d := cmp.Diff(reqs, []string{http.MethodPost, http.MethodPost}); d != "" {
		t.Errorf("requests (-got +want):\n%s", d)
	}
	if len(keys) != 2 || !uuid.MatchString(keys[0]) || keys[1] != keys[0] {
		t.Errorf("Idempotency-Keys %q, want one UUID sent twice", keys)
	}
}

// TestRetryWithCallersKey: the key of the call's context is the one sent,
// on every try; a Retry-After over the cap is waited for the cap only.
func TestRetryWithCallersKey(t *testing.T) {
	srv, s := unavailableOnce(t, "3600")
	c := client.New(srv.URL, "k", client.WithRetries(1), client.WithMaxRetryWait(10*time.Millisecond))
	ctx := client.IdempotencyKey(context.Background(), "order-42")
	if _, err := c.CreateRecord(ctx, "mod_1", client.RecordInput{}); err != nil {
		t.Fatalf("create: %v, want the second answer", err)
	}
	_, keys := s.got()
	if d := cmp.Diff(keys, []string{"order-42", "order-42"}); d != "" {
		t.Errorf("Idempotency-Keys (-got +want):\n%s", d)
	}
}

// TestNoRetryOfPostWithoutKey: a POST without a key may have been applied,
// so its 503 comes back to the caller, even with retries on.
func TestNoRetryOfPostWithoutKey(t *testing.T) {
	srv, s := unavailableOnce(t, "0")
	c := client.New(srv.URL, "k", client.WithRetries(3))
	_, err := c.CreateRecord(context.Background(), "mod_1", client.RecordInput{})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("create: %v, want the 503", err)
	}
	reqs, keys := s.got()
	if len(reqs) != 1 || keys[0] != "" {
		t.Errorf("requests %q with keys %q, want one POST without a key", reqs, keys)
	}
}

// TestNoRetryByDefault: a client without WithRetries sends a GET once.
func TestNoRetryByDefault(t *testing.T) {
	srv, s := unavailableOnce(t, "0")
	_, err := client.New(srv.URL, "k").GetRecord(context.Background(), "mod_1", "rec_1")
	if !client.Transient(err) {
		t.Fatalf("get: %v, want the 503", err)
	}
	if reqs, _ := s.got(); len(reqs) != 1 {
		t.Errorf("requests %q, want one", reqs)
	}
}

// TestRetryAfterNoAnswer: a GET whose connection broke before an answer
// is sent again; the retries end after n more tries.
func TestRetryAfterNoAnswer(t *testing.T) {
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.add(r) <= 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"rec_1","module_id":"mod_1","fields":{},"custom_data":{},"version":3}`))
	}))
	defer srv.Close()
	ctx := context.Background()

	_, err := client.New(srv.URL, "k", client.WithRetries(1), client.WithMaxRetryWait(time.Millisecond)).GetRecord(ctx, "mod_1", "rec_1")
	var te *client.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("two broken tries: %v (%T), want a *TransportError", err, err)
	}
	rec, err := client.New(srv.URL, "k", client.WithRetries(1), client.WithMaxRetryWait(time.Millisecond)).GetRecord(ctx, "mod_1", "rec_1")
	if err != nil || rec.Version != 3 {
		t.Fatalf("third try: %+v, %v; want the record", rec, err)
	}
	if reqs, _ := s.got(); len(reqs) != 3 {
		t.Errorf("requests %q, want 3", reqs)
	}
}

// TestRetryStopsWithContext: a wait before a retry ends with the call's
// context.
func TestRetryStopsWithContext(t *testing.T) {
	srv, s := unavailableOnce(t, "3600")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := client.New(srv.URL, "k", client.WithRetries(1)).GetRecord(ctx, "mod_1", "rec_1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get: %v, want the context's deadline", err)
	}
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Errorf("get: %v, want the 503 it waited after too", err)
	}
	if reqs, _ := s.got(); len(reqs) != 1 {
		t.Errorf("requests %q, want one", reqs)
	}
}

// TestRetryConflictWhileRunning: a keyed write answered 409 with
// Retry-After (its first try still runs under the key) is sent again with
// the same key; a 409 without Retry-After, or to a write without a key, is
// a conflict the caller must see.
func TestRetryConflictWhileRunning(t *testing.T) {
	const running = `{"error":"conflict","message":"a request with this Idempotency-Key is still running","request_id":"req_1"}`
	tests := []struct {
		name      string
		after     string
		key       string
		wantTries int
	}{
		{"keyed, with Retry-After", "1", "order-42", 2},
		{"keyed, without Retry-After", "", "order-42", 1},
		{"without a key", "1", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, s := failOnce(t, http.StatusConflict, running, tt.after)
			c := client.New(srv.URL, "k", client.WithRetries(3), client.WithMaxRetryWait(10*time.Millisecond))
			ctx := context.Background()
			if tt.key != "" {
				ctx = client.IdempotencyKey(ctx, tt.key)
			}
			_, err := c.CreateRecord(ctx, "mod_1", client.RecordInput{})
			reqs, keys := s.got()
			if len(reqs) != tt.wantTries {
				t.Fatalf("requests %q, want %d", reqs, tt.wantTries)
			}
			for i, k := range keys {
				if k != tt.key {
					t.Errorf("try %d: Idempotency-Key %q, want %q", i+1, k, tt.key)
				}
			}
			var e *client.Error
			switch {
			case tt.wantTries > 1 && err != nil:
				t.Errorf("create: %v, want the record of the second try", err)
			case tt.wantTries == 1 && (!errors.As(err, &e) || e.Status != http.StatusConflict):
				t.Errorf("create: %v, want the 409", err)
			}
		})
	}
}

// TestRetriedCreateAppliedOnce: against the real API, a create whose
// first try was applied and whose answer was lost with the connection is
// sent again by the client with the same Idempotency-Key; the API answers
// the retry with the first try's record, and there is one record.
func TestRetriedCreateAppliedOnce(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := storetest.Open(t, d)
			_, _, adminKey, err := store.CreateTenant(ctx, "acme", 1_000_000)
			if err != nil {
				t.Fatal(err)
			}
			api := handler(store)
			s := &seen{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if s.add(r) == 2 { // the create's first try
					api.ServeHTTP(httptest.NewRecorder(), r) // applied; its answer lost
					if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
						conn.Close()
					}
					return
				}
				api.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			c := client.New(srv.URL, adminKey, client.WithRetries(2), client.WithIdempotencyKeys(), client.WithMaxRetryWait(time.Millisecond))

			m, err := c.CreateModule(ctx, client.ModuleInput{Slug: "orders", Name: "Orders", Fields: []client.Field{{Name: "n", Type: "number"}}})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := c.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"n": 1}})
			if err != nil {
				t.Fatalf("create with a lost first answer: %v", err)
			}
			page, err := c.ListRecords(ctx, m.ID, 1, 10)
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != 1 || page.Data[0].ID != rec.ID {
				t.Errorf("records %+v, want only the created %s", page.Data, rec.ID)
			}
			reqs, keys := s.got()
			if len(reqs) != 4 || keys[1] == "" || keys[1] != keys[2] {
				t.Errorf("requests %q with keys %q: want the create sent twice with one key", reqs, keys)
			}
		})
	}
}
