package harness

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReceiver: a delivery sent over HTTP is observed with its headers'
// event id and attempt and its body's record, and answered 204; with a
// fail share of 1, 500.
func TestReceiver(t *testing.T) {
	for _, c := range []struct {
		failShare float64
		want      int
	}{{0, http.StatusNoContent}, {1, http.StatusInternalServerError}} {
		var (
			mu  sync.Mutex
			got []Request
		)
		r, err := StartReceiver(ReceiverOptions{FailShare: c.failShare, Observe: func(req Request) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, req)
		}})
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		req, _ := http.NewRequest(http.MethodPost, r.URL("/a"), strings.NewReader(`{"record":{"id":"rec_1","version":3}}`))
		req.Header.Set("Webhook-Id", "evt_1")
		req.Header.Set("X-Webhook-Attempt", "2")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		r.Close()
		if res.StatusCode != c.want {
			t.Errorf("fail share %v: answered %d, want %d", c.failShare, res.StatusCode, c.want)
		}
		mu.Lock()
		if len(got) != 1 {
			t.Fatalf("observed %d requests, want 1", len(got))
		}
		g := got[0]
		mu.Unlock()
		if g.Path != "/a" || g.EventID != "evt_1" || g.Attempt != 2 || g.RecordID != "rec_1" || g.Version != 3 || g.Status != c.want || g.At.Before(before) {
			t.Errorf("observed %+v", g)
		}
		if r.Last().IsZero() {
			t.Errorf("Last is zero after a request")
		}
	}
}
