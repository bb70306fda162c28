//go:build !noembedtemporal

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

func TestWebhooksEndToEnd(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			cfg := webhookConfig(t, d)
			base, stop := startService(t, cfg, io.Discard)
			key := cfg.BootstrapAdminKey

			mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
				"fields": []any{map[string]any{"name": "title", "type": "string"}, map[string]any{"name": "stage", "type": "status", "states": []string{"new", "done"}, "initial": "new"}}})
			modID := mod["id"].(string)

			ok := newReceiver(t, 0)
			flaky := newReceiver(t, 2)
			var okEndpoint string
			for _, r := range []*receiver{ok, flaky} {
				ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": r.srv.URL + "/hook", "events": models.EventTypes})
				r.secret = ep["secret"].(string)
				if r == ok {
					okEndpoint = ep["id"].(string)
				}
				// Every body, as it arrives, against its module's event schema.
				r.check = schemaCheck(base, key)
			}

			rec := jsonCall(t, "POST", base+"/api/modules/"+modID+"/records", key, map[string]any{"fields": map[string]any{"title": "a"}})
			jsonCall(t, "PATCH", base+"/api/modules/"+modID+"/records/"+rec["id"].(string), key, map[string]any{"fields": map[string]any{"stage": "done"}})

			// The healthy receiver gets created, updated and status_change, each signed.
			storetest.Eventually(t, 30*time.Second, "three deliveries", func() bool { return len(ok.received()) >= 3 })
			events := map[string]bool{}
			for _, g := range ok.received() {
				if !g.verified {
					t.Errorf("%s: signature did not verify", g.event)
				}
				if g.body["id"] != g.id || g.body["event"] != g.event {
					t.Errorf("headers %s/%s do not match the body %v", g.id, g.event, g.body)
				}
				events[g.event] = true
			}
			for _, e := range []string{"record_created", "record_updated", "status_change"} {
				if !events[e] {
					t.Errorf("no %s delivered; got %v", e, events)
				}
			}

			// The flaky receiver: two failures, then success, three rows per event.
			var created received
			for _, g := range ok.received() {
				if g.event == "record_created" {
					created = g
				}
			}
			storetest.Eventually(t, 30*time.Second, "retries to succeed", func() bool {
				st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?succeeded=true&event_id="+created.id+"&limit=100", key, "")
				return st == 200 && m["total"].(float64) == 2 // one per endpoint
			})
			st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?event_id="+created.id+"&limit=100", key, "")
			if st != 200 {
				t.Fatal(st)
			}
			if got := m["total"].(float64); got != 4 {
				t.Errorf("%v delivery rows for the event, want 4 (1 to the healthy receiver, 3 to the flaky one)", got)
			}
			var failed, succeeded int
			var someID string
			for _, row := range m["data"].([]any) {
				r := row.(map[string]any)
				if r["succeeded"] == true {
					succeeded++
					someID = r["id"].(string)
				} else {
					failed++
					if r["error"] != "http_status" || r["response_status"].(float64) != 503 {
						t.Errorf("failed row %v", r)
					}
				}
			}
			if failed != 2 || succeeded != 2 {
				t.Errorf("%d failed and %d succeeded rows, want 2 and 2", failed, succeeded)
			}

			// A replay arrives with the same X-Webhook-Id and leaves a row with replay_of.
			beforeOK, beforeFlaky := len(ok.received()), len(flaky.received())
			st, rep := call(t, "POST", base+"/api/admin/webhook-deliveries/"+someID+"/replay", key, "")
			if st != 202 || !strings.HasSuffix(rep["workflow_id"].(string), "/replay-1") {
				t.Fatalf("replay: %d %v", st, rep)
			}
			storetest.Eventually(t, 30*time.Second, "the replay, with the event's X-Webhook-Id", func() bool {
				for _, g := range append(ok.received()[beforeOK:], flaky.received()[beforeFlaky:]...) {
					if g.id == created.id {
						return true
					}
				}
				return false
			})
			storetest.Eventually(t, 10*time.Second, "the replay's row", func() bool {
				st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?event_id="+created.id+"&limit=100", key, "")
				if st != 200 {
					return false
				}
				for _, row := range m["data"].([]any) {
					if row.(map[string]any)["replay_of"] == someID {
						return true
					}
				}
				return false
			})

			// recordhub to recordhub: an endpoint delivers the orders module's
			// new records to the inbound webhook of a mirror module, keyed
			// with the endpoint's own secret, so the outbound signature is
			// verified inbound; the mirror's record then fires its own
			// outbound events, as a REST write would.
			mirror := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "mirror", "name": "Mirror",
				"fields": []any{map[string]any{"name": "source_id", "type": "string", "required": true}, map[string]any{"name": "title", "type": "string"}}})
			mirrorID := mirror["id"].(string)
			ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{"url": "http://127.0.0.1:1/placeholder", "events": []string{"record_created"}, "module_ids": []string{modID}})
			hook := jsonCall(t, "PUT", base+"/api/admin/modules/"+mirrorID+"/inbound-webhook", key, map[string]any{
				"secret":       ep["secret"],
				"mapping":      []any{map[string]any{"source": "$.payload.record.id", "field": "source_id"}, map[string]any{"source": "$.payload.record.fields.title", "field": "title"}},
				"match_fields": []string{"source_id"},
			})
			jsonCall(t, "PATCH", base+"/api/admin/webhook-endpoints/"+ep["id"].(string), key, map[string]any{"url": hook["url"]})
			src := jsonCall(t, "POST", base+"/api/modules/"+modID+"/records", key, map[string]any{"fields": map[string]any{"title": "mirrored"}})
			var mirrored map[string]any
			storetest.Eventually(t, 30*time.Second, "the mirror record", func() bool {
				st, m := call(t, "GET", base+"/api/modules/"+mirrorID+"/records?filter[source_id]="+src["id"].(string), key, "")
				if data, _ := m["data"].([]any); st == 200 && len(data) == 1 {
					mirrored = data[0].(map[string]any)
				}
				return mirrored != nil
			})
			if title := mirrored["fields"].(map[string]any)["title"]; title != "mirrored" {
				t.Errorf("mirror record fields %v", mirrored["fields"])
			}
			storetest.Eventually(t, 30*time.Second, "the mirror record's own record_created", func() bool {
				for _, g := range ok.received() {
					if g.event == "record_created" && g.body["record"].(map[string]any)["id"] == mirrored["id"] {
						return true
					}
				}
				return false
			})
			_, evs := call(t, "GET", base+"/api/admin/modules/"+mirrorID+"/inbound-events", key, "")
			if evs["total"].(float64) != 1 || evs["data"].([]any)[0].(map[string]any)["action"] != "created" {
				t.Errorf("mirror inbound events %v", evs)
			}
			for _, g := range append(ok.received(), flaky.received()...) {
				if g.checked != nil {
					t.Errorf("%s body does not validate against its module's event schema: %v\nbody: %s", g.event, g.checked, g.raw)
				}
			}
			checkPurgeSchedule(t, cfg)
			checkSearchable(t, fmt.Sprintf("127.0.0.1:%d", cfg.TemporalPort), cfg.TemporalNamespace, refOf(created, okEndpoint))
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCrashAfterWrite kills the service (SIGKILL, a child process) right
// after a record write, while the receiver still refuses; after a restart
// the event is delivered, and accepted exactly once.
func TestCrashAfterWrite(t *testing.T) {
	cfg := webhookConfig(t, models.SQLite)
	r := newReceiver(t, 1<<30) // refuses until told otherwise
	key := cfg.BootstrapAdminKey

	child := startChild(t, cfg)
	mod := jsonCall(t, "POST", child.base+"/api/admin/modules", key, map[string]any{"slug": "crash", "name": "Crash", "fields": []any{}})
	ep := jsonCall(t, "POST", child.base+"/api/admin/webhook-endpoints", key, map[string]any{"url": r.srv.URL, "events": []string{"record_created"}})
	r.secret = ep["secret"].(string)
	jsonCall(t, "POST", child.base+"/api/modules/"+mod["id"].(string)+"/records", key, map[string]any{"fields": map[string]any{}})
	child.kill(t)

	r.mu.Lock()
	r.failFirst = 0
	r.mu.Unlock()
	child = startChild(t, cfg)
	defer child.kill(t)
	accepted := func() (n int, ids map[string]bool) {
		ids = map[string]bool{}
		for _, g := range r.received() {
			ids[g.id] = true
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for id, a := range r.attempts {
			if a > r.failFirst && ids[id] {
				n++
			}
		}
		return n, ids
	}
	storetest.Eventually(t, 60*time.Second, "the delivery after restart", func() bool { n, _ := accepted(); return n >= 1 })
	// Nothing more can be sent once the event's delivery workflow has
	// ended and the event is no longer pending (no dispatch starts another).
	_, ids := accepted()
	for id := range ids {
		waitDelivered(t, cfg, id, ep["id"].(string))
	}
	if _, ids := accepted(); len(ids) != 1 {
		t.Errorf("%d distinct events delivered, want 1", len(ids))
	}
	var ok int
	for _, g := range r.received() {
		if !g.verified || g.event != "record_created" {
			t.Errorf("bad delivery %+v", g)
		}
	}
	st, m := call(t, "GET", child.base+"/api/admin/webhook-deliveries?succeeded=true", key, "")
	if st == 200 {
		ok = int(m["total"].(float64))
	}
	if ok != 1 {
		t.Errorf("%d successful delivery rows, want exactly 1", ok)
	}
}

// waitDelivered waits until the delivery workflow of an event to an
// endpoint has ended, and the event is no longer pending in the outbox.
func waitDelivered(t *testing.T, cfg Config, eventID, endpointID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", cfg.TemporalPort), Namespace: cfg.TemporalNamespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.GetWorkflow(ctx, workflows.WorkflowID(eventID, endpointID), "").Get(ctx, nil); err != nil {
		t.Fatalf("delivery workflow of %s: %v", eventID, err)
	}
	store, err := openStore(ctx, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	storetest.Eventually(t, 30*time.Second, "the event to leave the outbox", func() bool {
		pending, err := store.PendingEvents(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(pending) == 0
	})
}

// TestMain turns this test binary into the service when it is started as
// a child by startChild, into a receiver when started by newChildReceiver,
// or into the command (main) when RECORDHUB_E2E_MAIN_ARGS holds a command
// line.
func TestMain(m *testing.M) {
	if log := os.Getenv("RECORDHUB_E2E_RECEIVER"); log != "" {
		fmt.Fprintln(os.Stderr, serveArrivals(log, os.Getenv("RECORDHUB_E2E_ADDR_FILE")))
		os.Exit(1)
	}
	if args := os.Getenv("RECORDHUB_E2E_MAIN_ARGS"); args != "" {
		// The command line as the process runs it, signals included.
		os.Exit(mainStatus(strings.Fields(args)))
	}
	if os.Getenv("RECORDHUB_E2E_CHILD") != "1" {
		os.Exit(m.Run())
	}
	cfg, err := configFromEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	addrFile := os.Getenv("RECORDHUB_E2E_ADDR_FILE")
	err = run(context.Background(), cfg, Env{Stdout: os.Stdout, Stderr: os.Stderr, Listening: func(addr string) {
		os.WriteFile(addrFile+".tmp", []byte(addr), 0o600)
		os.Rename(addrFile+".tmp", addrFile)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// searchRef is what an operator searches a delivery by: its event and the
// endpoint it went to.
type searchRef struct {
	tenant, endpoint, module, record, eventType, eventID string
}

// refOf is the searchRef of the delivery of ev to the endpoint.
func refOf(ev received, endpointID string) searchRef {
	record := ev.body["record"].(map[string]any)
	return searchRef{tenant: ev.body["tenant_id"].(string), endpoint: endpointID, module: record["module_id"].(string),
		record: record["id"].(string), eventType: ev.event, eventID: ev.id}
}

// checkSearchable asks the visibility of the Temporal server at addr, as
// an operator types them in the Temporal UI, each query that should find
// the delivery d: by each of recordhub's search attributes, and by
// workflow id, type and status.
func checkSearchable(t *testing.T, addr, namespace string, d searchRef) {
	t.Helper()
	ctx := t.Context()
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	find := func(query string) []string {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: query, PageSize: 1000})
		if err != nil {
			t.Fatalf("list %q: %v", query, err)
		}
		var ids []string
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		return ids
	}
	// The event's first delivery to the endpoint (a replay of it, if the
	// test made one, is an execution of its own).
	var id string
	one := fmt.Sprintf("RecordhubRecord = %q AND RecordhubEndpoint = %q AND RecordhubEventType = %q", d.record, d.endpoint, d.eventType)
	storetest.Eventually(t, 30*time.Second, "the delivery in the Temporal UI's list", func() bool {
		for _, found := range find(one) {
			if found == workflows.WorkflowID(d.eventID, d.endpoint) {
				id = found
			}
		}
		return id != ""
	})
	for _, q := range []string{
		fmt.Sprintf("RecordhubTenant = %q", d.tenant),
		fmt.Sprintf("RecordhubEndpoint = %q", d.endpoint),
		fmt.Sprintf("RecordhubModule = %q", d.module),
		fmt.Sprintf("RecordhubRecord = %q", d.record),
		fmt.Sprintf("RecordhubEventType = %q", d.eventType),
		fmt.Sprintf("WorkflowId = %q", id),
		fmt.Sprintf("WorkflowType = %q", workflows.DeliveryWorkflowName),
		`ExecutionStatus = "Completed"`,
	} {
		storetest.Eventually(t, 30*time.Second, "the delivery found by "+q, func() bool {
			return slices.Contains(find(q), id)
		})
	}
}
