//go:build !noembedtemporal

package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestOrderedWorkerKilled kills the service (SIGKILL, a child process
// holding the API, the dispatcher, the worker and the embedded Temporal
// server) while a delivery in the middle of one record's ordered sequence
// waits for the receiver's answer. After a restart the record's versions
// go on arriving in order from the one in flight: its sequencer and queue
// live in Temporal, and the lost attempt runs again. The version in flight
// may arrive twice in a row (delivery is at least once); none is skipped
// and none arrives out of order.
func TestOrderedWorkerKilled(t *testing.T) {
	const updates, holdAt = 30, 12
	cfg := webhookConfig(t, models.SQLite)
	key := cfg.BootstrapAdminKey
	var (
		mu       sync.Mutex
		versions []int64
	)
	url, held := holdingReceiver(t, func(_ *http.Request, b []byte) bool {
		var body struct {
			Record struct {
				Version int64 `json:"version"`
			} `json:"record"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			body.Record.Version = -1 // out of any order: the test fails on it
		}
		mu.Lock()
		defer mu.Unlock()
		first := !slices.Contains(versions, holdAt)
		versions = append(versions, body.Record.Version)
		return body.Record.Version == holdAt && first
	})

	child := startChild(t, cfg)
	mod := jsonCall(t, "POST", child.base+"/api/admin/modules", key, map[string]any{"slug": "ordered", "name": "Ordered",
		"fields": []any{map[string]any{"name": "n", "type": "integer"}}})
	modID := mod["id"].(string)
	jsonCall(t, "POST", child.base+"/api/admin/webhook-endpoints", key, map[string]any{"url": url,
		"events": []string{"record_created", "record_updated"}, "module_ids": []string{modID}, "ordering": "record"})
	rec := jsonCall(t, "POST", child.base+"/api/modules/"+modID+"/records", key, map[string]any{"fields": map[string]any{"n": 0}})
	for i := 1; i <= updates; i++ {
		jsonCall(t, "PATCH", child.base+"/api/modules/"+modID+"/records/"+rec["id"].(string), key, map[string]any{"fields": map[string]any{"n": i}})
	}
	select {
	case <-held:
	case <-time.After(2 * time.Minute):
		t.Fatalf("version %d did not reach the receiver", holdAt)
	}
	child.kill(t)

	child = startChild(t, cfg)
	defer child.kill(t)
	last := int64(updates + 1)
	// Nothing moves until the killed worker's workflow task times out,
	// which takes a minute (the attempt timeout and its row margin, with
	// room): two minutes without a new version is a stall.
	storetest.WhileProgressing(t, 2*time.Minute, "every version after the restart", func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		return len(versions), slices.Contains(versions, last)
	})
	mu.Lock()
	defer mu.Unlock()
	want := make([]int64, last)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if got := slices.Compact(slices.Clone(versions)); !slices.Equal(got, want) {
		t.Errorf("versions arrived as %v, want 1..%d in order (an immediate repeat allowed)", versions, last)
	}
	if n := len(versions) - len(want); n > 1 {
		t.Errorf("%d repeats in %v, want at most the one in flight", n, versions)
	}
}
