//go:build !noembedtemporal

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestWorkerKilledDuringLocalAttempt kills the service (SIGKILL, a child
// process holding the worker and the embedded Temporal server) while the
// delivery's first attempt, a local activity, waits for the receiver's
// answer. After a restart the workflow task that ran the attempt times
// out (a minute after it started) and runs again; the attempt runs again as attempt 2, which marks the
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
	// The killed worker's workflow task times out a minute after it
	// started (the attempt timeout and its row margin, with room).
	storetest.Eventually(t, 2*time.Minute, "the attempt after the restart to succeed", func() bool {
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

// TestHangingFirstAttemptsSentOnce freezes the whole service (SIGSTOP: its
// worker and embedded Temporal server) for 12 s while 300 first attempts
// wait at a receiver that never answers, as a machine too busy to run the
// worker would, 9 s into the attempts: after the SDK would heartbeat a
// workflow task of Temporal's default 10 s, and past that task's timeout.
// Every (event, attempt) reaches the receiver at most once, and every
// request has its row with the number it was sent as.
func TestHangingFirstAttemptsSentOnce(t *testing.T) {
	cfg := webhookConfig(t, models.SQLite)
	key := cfg.BootstrapAdminKey
	const records = 300
	var (
		mu   sync.Mutex
		sent = map[[2]string]int{}
		reqs int
	)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		sent[[2]string{r.Header.Get("X-Webhook-Id"), r.Header.Get("X-Webhook-Attempt")}]++
		reqs++
		mu.Unlock()
		<-r.Context().Done() // until the attempt's timeout
	}))
	defer recv.Close()
	requests := func() int {
		mu.Lock()
		defer mu.Unlock()
		return reqs
	}

	// The default 30 s attempts; no retry within the test.
	child := startChild(t, cfg, "RECORDHUB_WEBHOOK_RETRY_INITIAL=1h", "RECORDHUB_WEBHOOK_RETRY_MAX_INTERVAL=1h")
	mod := jsonCall(t, "POST", child.base+"/api/admin/modules", key, map[string]any{"slug": "hang", "name": "Hang", "fields": []any{}})
	ep := jsonCall(t, "POST", child.base+"/api/admin/webhook-endpoints", key, map[string]any{"url": recv.URL, "events": []string{"record_created"}})
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for range records / 6 {
				jsonCall(t, "POST", child.base+"/api/modules/"+mod["id"].(string)+"/records", key, map[string]any{"fields": map[string]any{}})
			}
		})
	}
	wg.Wait()
	storetest.Eventually(t, 60*time.Second, "every first attempt to reach the receiver", func() bool { return requests() >= records })

	// The fault itself, in time: when, and for how long, the service is
	// frozen.
	time.Sleep(9 * time.Second)
	if err := child.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(12 * time.Second)
	if err := child.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	type row struct {
		EventID  string  `json:"event_id"`
		Attempt  int     `json:"attempt"`
		Error    string  `json:"error"`
		Finished *string `json:"finished_at"`
	}
	var rows []row
	storetest.Eventually(t, 3*time.Minute, "every request's row to be finished", func() bool {
		rows = rows[:0]
		for page := 1; ; page++ {
			st, m := call(t, "GET", fmt.Sprintf("%s/api/admin/webhook-deliveries?endpoint_id=%s&limit=100&page=%d", child.base, ep["id"], page), key, "")
			if st != http.StatusOK {
				return false
			}
			data := m["data"].([]any)
			for _, d := range data {
				b, _ := json.Marshal(d)
				var r row
				json.Unmarshal(b, &r)
				rows = append(rows, r)
			}
			if len(data) < 100 {
				break
			}
		}
		for _, r := range rows {
			if r.Error == models.DeliveryErrInFlight {
				return false
			}
		}
		return len(rows) >= requests()
	})
	mu.Lock()
	defer mu.Unlock()
	for pair, n := range sent {
		if n > 1 {
			t.Errorf("event %s attempt %s sent %d times", pair[0], pair[1], n)
		}
	}
	got := map[[2]string]int{}
	for _, r := range rows {
		got[[2]string{r.EventID, strconv.Itoa(r.Attempt)}]++
	}
	if diff := cmp.Diff(sent, got); diff != "" {
		t.Errorf("rows' (event, attempt) against the requests' (-requests +rows):\n%s", diff)
	}
	if len(rows) != reqs {
		t.Errorf("%d rows for %d requests", len(rows), reqs)
	}
}
