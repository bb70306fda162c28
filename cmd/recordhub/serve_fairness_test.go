//go:build !noembedtemporal

package main

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestTenantFairness: while tenant A has 2,000 deliveries
// pending, each of 5 events of tenant B, one a second, reaches B's receiver
// ahead of A's backlog, on the embedded stack (fair claims in the outbox,
// the tenant as Temporal's fairness key, fairness on in the embedded
// server). Before, B's events waited behind all of A's backlog.
//
// The bound is in deliveries, not seconds, so that a slow or busy machine
// cannot fail it: at most maxAhead of A's deliveries may arrive between
// sending a B event and its arrival, where first in, first out would put
// the whole backlog (more than 1,800) ahead of it.
func TestTenantFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 deliveries: not in -short")
	}
	cfg := webhookConfig(t, models.SQLite)
	base, _ := startService(t, cfg, io.Discard)
	ctx := t.Context()

	// Tenant A is the bootstrap tenant; tenant B is made as the CLI does.
	store, err := openStore(ctx, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, _, keyB, err := store.CreateTenant(ctx, "b", 100_000)
	if err != nil {
		t.Fatal(err)
	}
	keyA := cfg.BootstrapAdminKey
	type tenant struct {
		key, module string
		rcv         *deliveries
	}
	setUp := func(key string) tenant {
		mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
			"fields": []any{map[string]any{"name": "title", "type": "string"}}})
		rcv := newDeliveries(t)
		jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": rcv.srv.URL, "events": []string{"record_created"}})
		// An unlimited key for the burst (admin keys have the default limit).
		k := jsonCall(t, "POST", base+"/api/admin/keys", key, map[string]any{"name": "burst", "permissions": map[string]any{"*": []string{"write"}}, "rate_limit_per_minute": 1_000_000})
		return tenant{key: k["key"].(string), module: mod["id"].(string), rcv: rcv}
	}
	a, b := setUp(keyA), setUp(keyB)
	create := func(tn tenant) string {
		t.Helper()
		st, m := call(t, "POST", base+"/api/modules/"+tn.module+"/records", tn.key, `{"fields":{"title":"x"}}`)
		if st != 201 {
			t.Fatalf("create: %d %v", st, m)
		}
		return m["id"].(string)
	}

	const burst = 2000
	concurrently(burst, 16, func() { create(a) })
	t.Logf("tenant A: %d records created; %d delivered so far", burst, a.rcv.events())

	const maxAhead = burst / 10
	for i := range 5 {
		sent := time.Now()
		aBefore := a.rcv.events()
		id := create(b)
		storetest.Eventually(t, 30*time.Second, fmt.Sprintf("tenant B's event %d", i+1), func() bool { _, ok := b.rcv.at(id); return ok })
		got, _ := b.rcv.at(id)
		aAfter := a.rcv.events()
		pendingA := burst - aAfter
		t.Logf("tenant B's event %d arrived after %s, with %d of A's deliveries arriving meanwhile and %d pending",
			i+1, got.Sub(sent).Round(time.Millisecond), aAfter-aBefore, pendingA)
		if ahead := aAfter - aBefore; ahead > maxAhead {
			t.Errorf("tenant B's event %d waited behind %d of tenant A's deliveries, want at most %d", i+1, ahead, maxAhead)
		}
		if pendingA < 100 {
			t.Fatalf("tenant A's backlog drained (%d pending) before B's events were sent: the test shows nothing", pendingA)
		}
		if wait := time.Until(sent.Add(time.Second)); wait > 0 {
			select {
			case <-time.After(wait): // one event a second, as the issue describes
			case <-ctx.Done():
				return
			}
		}
	}
	// And A's deliveries all arrive, once each.
	storetest.WhileProgressing(t, time.Minute, "all of tenant A's deliveries", func() (int, bool) {
		n := a.rcv.events()
		return n, n == burst
	})
	if d := a.rcv.doubled(); len(d) > 0 {
		t.Errorf("tenant A's events delivered more than once: %v", d)
	}
}
