package api_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// TestRecoverOneRunning: ten recover calls at once start exactly one
// recovery (202) and answer the nine others 409 conflict naming it; one
// workflow is started. Once it ended, a new call starts the next number.
func TestRecoverOneRunning(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		starter := &fakeStarter{}
		store := storetest.Open(t, d)
		e := newEnvOn(t, store, withRecoverer(recoverer{&workflows.Recoveries{Starter: starter, Store: store}}))
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		path := "/api/admin/webhook-endpoints/" + ep + "/recover"
		body := map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}

		const callers = 10
		answers := make([]*resp, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() { answers[i] = e.call("POST", path, e.admin, body) })
		}
		wg.Wait()
		var accepted, refused []map[string]any
		for _, a := range answers {
			switch a.status {
			case 202:
				accepted = append(accepted, a.json())
			case 409:
				refused = append(refused, a.json())
			default:
				t.Errorf("answer %d %s, want 202 or 409", a.status, a.body)
			}
		}
		if len(accepted) != 1 || len(refused) != callers-1 {
			t.Fatalf("%d accepted, %d refused; want 1 and %d", len(accepted), len(refused), callers-1)
		}
		id, wf := accepted[0]["recovery_id"], accepted[0]["workflow_id"]
		if wf != "webhook-recovery/"+ep+"/1" {
			t.Errorf("the recovery started is %v, want number 1", wf)
		}
		for _, r := range refused {
			if r["error"] != "conflict" || r["recovery_id"] != id || r["workflow_id"] != wf || !strings.Contains(fmt.Sprint(r["message"]), fmt.Sprint(id)) {
				t.Errorf("refusal %v, want conflict naming %v (%v)", r, id, wf)
			}
		}
		if n := starter.count(); n != 1 {
			t.Errorf("%d workflows started, want 1", n)
		}

		if err := store.FinishRecovery(t.Context(), id.(string), models.RecoveryCompleted, models.RecoveryProgress{}, "", time.Now()); err != nil {
			t.Fatal(err)
		}
		next := e.call("POST", path, e.admin, body).want(202).json()
		if next["workflow_id"] != "webhook-recovery/"+ep+"/2" {
			t.Errorf("after the first ended: %v, want number 2", next)
		}
	})
}

// TestRecoverPastStaleRunning: a recovery recorded running whose workflow
// does not exist (or ended without recording it) does not block its
// endpoint: the next call checks it, marks it failed and starts a new one.
// A running one that Temporal confirms, or that Temporal cannot be asked
// about, still refuses.
func TestRecoverPastStaleRunning(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		store := storetest.Open(t, d)
		var offset atomic.Int64
		start := time.Now()
		clock := func() time.Time { return start.Add(time.Duration(offset.Load())) }
		desc := &fakeDescriber{}
		e := newEnvOn(t, store, withRecoverer(recoverer{&workflows.Recoveries{Starter: &fakeStarter{}, Describer: desc, Store: store, Now: clock}}))
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		path := "/api/admin/webhook-endpoints/" + ep + "/recover"
		body := map[string]any{"since": start.Add(-time.Hour).UTC().Format(time.RFC3339)}

		first := e.call("POST", path, e.admin, body).want(202).json()["recovery_id"].(string)
		offset.Store(int64(time.Minute))
		for _, c := range []struct {
			name   string
			status enumspb.WorkflowExecutionStatus
			err    error
		}{
			{"its workflow runs", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil},
			{"Temporal does not answer", 0, serviceerror.NewUnavailable("connection refused")},
		} {
			desc.set(c.status, c.err)
			if r := e.call("POST", path, e.admin, body).want(409).json(); r["recovery_id"] != first {
				t.Errorf("%s: %v, want 409 naming %s", c.name, r, first)
			}
		}

		desc.set(0, serviceerror.NewNotFound("workflow not found"))
		next := e.call("POST", path, e.admin, body).want(202).json()
		if next["workflow_id"] != "webhook-recovery/"+ep+"/2" {
			t.Errorf("past a stale recovery: %v, want number 2", next)
		}
		old := e.call("GET", "/api/admin/webhook-endpoints/"+ep+"/recoveries/"+first, e.admin, nil).want(200).json()
		if old["status"] != "failed" || !strings.Contains(fmt.Sprint(old["error"]), "does not exist") {
			t.Errorf("the stale recovery: %v, want failed, saying why", old)
		}
	})
}
