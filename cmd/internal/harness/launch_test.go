package harness

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitOK: it returns once the URL answers 200, gives up with the last
// answer after the limit, and with ErrExited when the process is gone.
func TestWaitOK(t *testing.T) {
	var ready atomic.Bool
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) >= 3 {
			ready.Store(true)
		}
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	if err := WaitOK(ctx, srv.Client(), srv.URL+"/readyz", time.Minute, nil); err != nil || calls.Load() != 3 {
		t.Errorf("got %v after %d requests, want nil after 3", err, calls.Load())
	}
	ready.Store(false)
	calls.Store(-1000)
	err := WaitOK(ctx, srv.Client(), srv.URL+"/readyz", 0, nil)
	if err == nil || err.Error() != "/readyz answered 503 Service Unavailable" {
		t.Errorf("past the limit: got %v, want the 503", err)
	}
	if err := WaitOK(ctx, srv.Client(), srv.URL+"/readyz", time.Minute, func() bool { return true }); !errors.Is(err, ErrExited) {
		t.Errorf("exited: got %v, want ErrExited", err)
	}
}
