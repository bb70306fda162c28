package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// TestAPIError: the API's error object comes back as an *Error that
// errors.As finds, with its status, code, details and request id.
func TestAPIError(t *testing.T) {
	ctx := context.Background()
	admin := newAPI(t)
	m, err := admin.CreateModule(ctx, client.ModuleInput{Slug: "notes", Name: "Notes", Fields: []client.Field{{Name: "title", Type: "string", Required: true}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{}})
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("create without a required field: %v (%T), want an *Error", err, err)
	}
	if e.Status != http.StatusUnprocessableEntity || e.Code == "" || e.RequestID == "" || len(e.Details) == 0 || e.Details[0].Field != "fields.title" {
		t.Errorf("got %+v, want a 422 with a code, a request id and a detail on title", e)
	}
	if client.Transient(err) {
		t.Errorf("a 422 counted as transient")
	}

	_, err = admin.WithKey("rh_wrong").CreateModule(ctx, client.ModuleInput{Slug: "x", Name: "x"})
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Errorf("a wrong key: %v, want a 401 *Error", err)
	}
}

// TestErrorOfAProxy: an answer that is not the API's still is an *Error,
// with the status, and the Retry-After of a 503.
func TestErrorOfAProxy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, "<html>upstream down</html>", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, "k").Recovery(context.Background(), "whe_1", "rcv_1")
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an *Error", err)
	}
	if e.Status != http.StatusServiceUnavailable || e.Code != "HTTP 503" || e.RetryAfter != 7*time.Second {
		t.Errorf("got %+v, want status 503, code HTTP 503, Retry-After 7s", e)
	}
	if !client.Transient(err) {
		t.Errorf("a 503 not counted as transient")
	}
}

// TestTransportError: a request that gets no answer is a *TransportError,
// transient.
func TestTransportError(t *testing.T) {
	// A server that hangs up before answering. Not a closed server's
	// port: another test, in this process or another, may be listening on
	// it by then and would take the request.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	_, err := client.New(srv.URL, "k").StartResync(context.Background(), "whe_1")
	var te *client.TransportError
	if !errors.As(err, &te) || te.Method != http.MethodPost {
		t.Fatalf("got %v (%T), want a *TransportError of the POST", err, err)
	}
	if !client.Transient(err) {
		t.Errorf("no answer not counted as transient")
	}
}
