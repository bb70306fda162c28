package api_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// resyncStarter records the resync workflows started.
type resyncStarter struct {
	mu     sync.Mutex
	inputs []workflows.ResyncInput
}

func (f *resyncStarter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inputs = append(f.inputs, args[0].(workflows.ResyncInput))
	return nil, nil
}

// TestResyncEndpoint: resync answers 202 with the resync, starts its
// workflow at the resync's position, and the status route shows it; a
// second one while it runs is a conflict naming it; an endpoint that does
// not take record_snapshot, a disabled one and a foreign one are refused.
func TestResyncEndpoint(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		starter := &resyncStarter{}
		store := storetest.Open(t, d)
		e := newEnvOn(t, store, withResyncer(resyncer{&workflows.Resyncs{Starter: starter, Store: store}}))
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_snapshot", "record_updated"}})["id"].(string)
		path := "/api/admin/webhook-endpoints/" + ep + "/resync"

		r := e.call("POST", path, e.admin, nil).want(202)
		rs := r.json()
		if rs["status"] != "running" || rs["workflow_id"] != "webhook-resync/"+ep+"/1" || rs["position"] == "" {
			t.Fatalf("started %v, want running resync number 1 with a position", rs)
		}
		if loc := r.header.Get("Location"); loc != "/api/admin/webhook-endpoints/"+ep+"/resyncs/"+rs["id"].(string) {
			t.Errorf("Location %q", loc)
		}
		if len(starter.inputs) != 1 || starter.inputs[0].ResyncID != rs["id"] || starter.inputs[0].Position != rs["position"] {
			t.Errorf("workflow inputs %+v, want the resync's id and position", starter.inputs)
		}
		got := e.call("GET", "/api/admin/webhook-endpoints/"+ep+"/resyncs/"+rs["id"].(string), e.admin, nil).want(200).json()
		if got["id"] != rs["id"] || got["status"] != "running" {
			t.Errorf("status route %v", got)
		}

		conflict := e.call("POST", path, e.admin, map[string]any{}).want(409).json()
		if conflict["resync_id"] != rs["id"] || !strings.Contains(conflict["message"].(string), rs["id"].(string)) {
			t.Errorf("second resync: %v, want a conflict naming %v", conflict, rs["id"])
		}
		if err := e.store.FinishResync(t.Context(), rs["id"].(string), models.ResyncCompleted, models.ResyncProgress{}, "", time.Now()); err != nil {
			t.Fatal(err)
		}
		if next := e.call("POST", path, e.admin, nil).want(202).json(); next["workflow_id"] != "webhook-resync/"+ep+"/2" {
			t.Errorf("after the first ended: %v, want number 2", next)
		}

		plain := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/b", "events": []string{"record_updated"}})["id"].(string)
		if msg := e.call("POST", "/api/admin/webhook-endpoints/"+plain+"/resync", e.admin, nil).want(409).json()["message"].(string); !strings.Contains(msg, "record_snapshot") {
			t.Errorf("an endpoint without record_snapshot: %q", msg)
		}
		off := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/c", "events": []string{"record_snapshot"}, "enabled": false})["id"].(string)
		e.call("POST", "/api/admin/webhook-endpoints/"+off+"/resync", e.admin, nil).want(409)

		other, _, _, err := e.store.CreateTenant(t.Context(), "other", 100)
		if err != nil {
			t.Fatal(err)
		}
		u := "https://hooks.example.com/other"
		foreign, _, err := e.store.CreateEndpoint(t.Context(), other.ID, models.EndpointInput{URL: &u, Events: &[]string{models.EventRecordSnapshot}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.call("POST", "/api/admin/webhook-endpoints/"+foreign.ID+"/resync", e.admin, nil).want(404)
		e.call("GET", "/api/admin/webhook-endpoints/"+ep+"/resyncs/rsy_missing", e.admin, nil).want(404)
		if n := len(starter.inputs); n != 2 {
			t.Errorf("%d workflows started, want 2", n)
		}
	})
}
