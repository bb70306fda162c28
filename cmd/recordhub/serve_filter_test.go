//go:build !noembedtemporal

package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// TestWebhookFiltersEndToEnd: endpoints with filters on the real service
// (embedded Temporal, real receivers). Each filtered receiver gets exactly
// the events whose record passes its filter: a status_change filter names
// the status moved to, a deletion is checked against the record before it,
// and a PATCH of the filter applies to the events dispatched after it. An
// event that fails a filter started no workflow for that endpoint and left
// no delivery row, while an endpoint without a filter got every event.
func TestWebhookFiltersEndToEnd(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			cfg := webhookConfig(t, d)
			base, stop := startService(t, cfg, io.Discard)
			key := cfg.BootstrapAdminKey

			mod := jsonCall(t, "POST", base+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
				"fields": []any{map[string]any{"name": "title", "type": "string"},
					map[string]any{"name": "stage", "type": "status", "states": []string{"new", "paid", "shipped"}, "initial": "new"}}})
			modID := mod["id"].(string)
			records := base + "/api/modules/" + modID + "/records"

			all, shipped, keep := newReceiver(t, 0), newReceiver(t, 0), newReceiver(t, 0)
			endpoint := func(r *receiver, events []string, filter map[string]any) string {
				ep := jsonCall(t, "POST", base+"/api/admin/webhook-endpoints", key, map[string]any{
					"url": r.srv.URL + "/hook", "events": events, "module_ids": []string{modID}, "filter": filter})
				r.secret = ep["secret"].(string)
				return ep["id"].(string)
			}
			endpoint(all, []string{"record_created", "status_change", "record_deleted"}, nil)
			shippedID := endpoint(shipped, []string{"status_change"}, map[string]any{"stage": "shipped"})
			keepID := endpoint(keep, []string{"record_created", "record_deleted"}, map[string]any{"title": "keep"})

			create := func(title string) string {
				return jsonCall(t, "POST", records, key, map[string]any{"fields": map[string]any{"title": title}})["id"].(string)
			}
			move := func(id, stage string) {
				jsonCall(t, "PATCH", records+"/"+id, key, map[string]any{"fields": map[string]any{"stage": stage}})
			}
			a, b := create("keep"), create("drop")
			move(a, "paid")
			move(a, "shipped")
			move(b, "shipped")
			jsonCall(t, "DELETE", records+"/"+a, key, nil)
			jsonCall(t, "DELETE", records+"/"+b, key, nil)
			// The endpoint without a filter gets all seven: each was dispatched.
			storetest.Eventually(t, 60*time.Second, "every event at the unfiltered receiver", func() bool { return len(all.received()) >= 7 })

			// keep now wants the other title, for the events from here on.
			got := jsonCall(t, "PATCH", base+"/api/admin/webhook-endpoints/"+keepID, key, map[string]any{"filter": map[string]any{"title": "drop"}})
			if diff := cmp.Diff(map[string]any{"title": "drop"}, got["filter"]); diff != "" {
				t.Errorf("patched filter (-want +got):\n%s", diff)
			}
			later, _ := create("drop"), create("keep")
			storetest.Eventually(t, 60*time.Second, "every event at the unfiltered receiver", func() bool { return len(all.received()) >= 9 })

			// What each filtered endpoint must get, by what the unfiltered
			// one got: (event type, record id, the stage or title in the body).
			type key3 struct{ Event, Record, Value string }
			describe := func(g received, field string) key3 {
				rec := g.body["record"].(map[string]any)
				return key3{g.event, rec["id"].(string), fmt.Sprint(rec["fields"].(map[string]any)[field])}
			}
			wantShipped := []key3{{"status_change", a, "shipped"}, {"status_change", b, "shipped"}}
			wantKeep := []key3{{"record_created", a, "keep"}, {"record_deleted", a, "keep"}, {"record_created", later, "drop"}}
			storetest.Eventually(t, 60*time.Second, "the filtered deliveries", func() bool {
				return len(shipped.received()) >= len(wantShipped) && len(keep.received()) >= len(wantKeep)
			})

			tc, err := client.Dial(client.Options{
				HostPort: fmt.Sprintf("127.0.0.1:%d", cfg.TemporalPort), Namespace: cfg.TemporalNamespace,
				Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer tc.Close()
			for _, c := range []struct {
				name, endpointID, field string
				r                       *receiver
				want                    []key3
			}{
				{"shipped", shippedID, "stage", shipped, wantShipped},
				{"keep", keepID, "title", keep, wantKeep},
			} {
				var gotKeys []key3
				for _, g := range c.r.received() {
					if !g.verified {
						t.Errorf("%s: %s: signature did not verify", c.name, g.event)
					}
					gotKeys = append(gotKeys, describe(g, c.field))
				}
				less := func(x, y key3) int { return strings.Compare(x.Event+x.Record, y.Event+y.Record) }
				slices.SortFunc(gotKeys, less)
				slices.SortFunc(c.want, less)
				if diff := cmp.Diff(c.want, gotKeys); diff != "" {
					t.Errorf("%s receiver got (-want +got):\n%s", c.name, diff)
				}
				// Every event of the module that this endpoint did not get:
				// no workflow was started for it.
				delivered := map[string]bool{}
				for _, g := range c.r.received() {
					delivered[g.id] = true
				}
				for _, g := range all.received() {
					if delivered[g.id] {
						continue
					}
					_, err := tc.DescribeWorkflowExecution(t.Context(), workflows.WorkflowID(g.id, c.endpointID), "")
					var notFound *serviceerror.NotFound
					if !errors.As(err, &notFound) {
						t.Errorf("%s: %s of %s: a workflow for the endpoint (%v), want none", c.name, g.event, g.id, err)
					}
				}
				// And the deliveries list holds rows of the delivered events
				// only, once their attempts' rows are written.
				var rows []any
				storetest.Eventually(t, 30*time.Second, c.name+"'s delivery rows", func() bool {
					st, m := call(t, "GET", base+"/api/admin/webhook-deliveries?limit=100&endpoint_id="+c.endpointID, key, "")
					if st != 200 {
						return false
					}
					rows = m["data"].([]any)
					return len(rows) >= len(c.want)
				})
				for _, row := range rows {
					if id := row.(map[string]any)["event_id"].(string); !delivered[id] {
						t.Errorf("%s: a delivery row of event %s, which its filter held back", c.name, id)
					}
				}
				if len(rows) != len(c.want) {
					t.Errorf("%s: %d delivery rows, want %d", c.name, len(rows), len(c.want))
				}
			}
			if n := len(all.received()); n != 9 {
				t.Errorf("the unfiltered receiver got %d events, want 9", n)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
