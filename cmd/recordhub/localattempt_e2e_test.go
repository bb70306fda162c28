//go:build !noembedtemporal

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestWorkerKilledDuringLocalAttempt kills the service (SIGKILL, a child
// process holding the worker and the embedded Temporal server) while the
// delivery's first attempt, a local activity, waits for the receiver's
// answer. After a restart the workflow task that ran the attempt times
// out and runs again; the attempt runs again as attempt 2, which marks the
// lost attempt's row worker_lost, and is accepted.
func TestWorkerKilledDuringLocalAttempt(t *testing.T) {
	cfg := webhookConfig(t, models.SQLite)
	key := cfg.BootstrapAdminKey
	var (
		mu       sync.Mutex
		attempts []string
	)
	url, held := holdingReceiver(t, func(r *http.Request, _ []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, r.Header.Get("X-Webhook-Attempt"))
		return len(attempts) == 1
	})

	child := startChild(t, cfg)
	mod := jsonCall(t, "POST", child.base+"/api/admin/modules", key, map[string]any{"slug": "lost", "name": "Lost", "fields": []any{}})
	ep := jsonCall(t, "POST", child.base+"/api/admin/webhook-endpoints", key, map[string]any{"url": url, "events": []string{"record_created"}})
	jsonCall(t, "POST", child.base+"/api/modules/"+mod["id"].(string)+"/records", key, map[string]any{"fields": map[string]any{}})
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("the first attempt did not reach the receiver")
	}
	child.kill(t)

	child = startChild(t, cfg)
	defer child.kill(t)
	type row struct {
		Attempt   int
		Error     string
		Succeeded bool
	}
	var rows []row
	storetest.Eventually(t, 90*time.Second, "the attempt after the restart to succeed", func() bool {
		st, m := call(t, "GET", child.base+"/api/admin/webhook-deliveries?endpoint_id="+ep["id"].(string)+"&limit=10", key, "")
		if st != http.StatusOK {
			return false
		}
		rows = rows[:0]
		ok := false
		for _, d := range m["data"].([]any) {
			d := d.(map[string]any)
			errCode, _ := d["error"].(string)
			rows = append(rows, row{int(d["attempt"].(float64)), errCode, d["succeeded"].(bool)})
			ok = ok || d["succeeded"].(bool)
		}
		return ok
	})
	slices.SortFunc(rows, func(a, b row) int { return a.Attempt - b.Attempt })
	want := []row{{1, models.DeliveryErrWorkerLost, false}, {2, "", true}}
	if !slices.Equal(rows, want) {
		t.Errorf("delivery rows %+v, want %+v", rows, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(attempts, []string{"1", "2"}) {
		t.Errorf("X-Webhook-Attempt of the requests received: %q, want 1 then 2", attempts)
	}
}

// holdingReceiver is a receiver for tests that kill the worker while a
// request waits: it answers 204, except to a request that hold (given the
// request and its whole body) says to hold, which it answers only once the
// worker that sent it is gone (the connection closed) or the test ends. held
// receives once for each request held.
func holdingReceiver(t *testing.T, hold func(r *http.Request, body []byte) bool) (url string, held <-chan struct{}) {
	t.Helper()
	h, release := make(chan struct{}, 1), make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to the end, so that the server notices the connection close.
		body, _ := io.ReadAll(r.Body)
		if !hold(r, body) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(recv.Close)
	t.Cleanup(func() { close(release) })
	return recv.URL, h
}
