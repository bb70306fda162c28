package api_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// TestRecoverEndpoint: recover answers 202 with the recovery's ids,
// starts its workflow with the window capped at now, and the status route
// shows it running; a second recovery, once the first ended, is numbered 2.
func TestRecoverEndpoint(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		starter := &fakeStarter{}
		store := storetest.Open(t, d)
		e := newEnvOn(t, store, withRecoverer(recoverer{&workflows.Recoveries{Starter: starter, Store: store}}))
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)

		since := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
		before := time.Now()
		r := e.call("POST", "/api/admin/webhook-endpoints/"+ep+"/recover", e.admin, map[string]any{
			"since": since.Format(time.RFC3339), "until": time.Now().Add(time.Hour).Format(time.RFC3339),
		}).want(202)
		var got struct {
			RecoveryID string `json:"recovery_id"`
			WorkflowID string `json:"workflow_id"`
		}
		r.decode(&got)
		if want := "webhook-recovery/" + ep + "/1"; got.WorkflowID != want {
			t.Errorf("workflow id %q, want %q", got.WorkflowID, want)
		}
		if loc := r.header.Get("Location"); loc != "/api/admin/webhook-endpoints/"+ep+"/recoveries/"+got.RecoveryID {
			t.Errorf("Location %q", loc)
		}
		if starter.count() != 1 || starter.started[0].ID != got.WorkflowID {
			t.Fatalf("started %+v, want one workflow %s", starter.started, got.WorkflowID)
		}
		in := starter.inputs[0]
		if in.RecoveryID != got.RecoveryID || in.EndpointID != ep || !in.Since.Equal(since) ||
			in.Until.Before(before) || in.Until.After(time.Now()) || !in.AsOf.Equal(in.Until) {
			t.Errorf("input %+v: want the window from %s capped at the request's time", in, since)
		}

		status := e.call("GET", "/api/admin/webhook-endpoints/"+ep+"/recoveries/"+got.RecoveryID, e.admin, nil).want(200).json()
		if status["status"] != "running" || status["found"] != 0.0 || status["finished_at"] != nil || status["workflow_id"] != got.WorkflowID {
			t.Errorf("status %v, want running with nothing found yet", status)
		}
		// Once the first ended, a second is numbered 2.
		if err := store.FinishRecovery(t.Context(), got.RecoveryID, models.RecoveryCompleted, models.RecoveryProgress{}, "", time.Now()); err != nil {
			t.Fatal(err)
		}
		second := e.call("POST", "/api/admin/webhook-endpoints/"+ep+"/recover", e.admin, map[string]any{"since": since.Format(time.RFC3339)}).want(202).json()
		if second["workflow_id"] != "webhook-recovery/"+ep+"/2" {
			t.Errorf("second recovery %v, want number 2", second)
		}
	})
}

// TestRecoverEndpointRefusals: bad windows are 422, a disabled endpoint
// 409, a foreign or missing one 404, a Temporal that does not answer 503
// (the recovery is then recorded failed); none of the refusals starts a
// workflow or records a recovery.
func TestRecoverEndpointRefusals(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		starter := &fakeStarter{}
		mine := newEnv(t, d)
		rec := recoverer{&workflows.Recoveries{Starter: starter, Store: mine.store}}
		e := newEnvOn(t, mine.store, withRecoverer(rec))
		theirs := newEnvOn(t, mine.store)
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		theirEP := theirs.createEndpoint(map[string]any{"url": "https://hooks.example.com/b", "events": []string{"record_created"}})["id"].(string)
		path := "/api/admin/webhook-endpoints/" + ep + "/recover"
		hourAgo := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)

		for _, c := range []struct {
			name   string
			body   any
			fields []string
		}{
			{"no since", map[string]any{}, []string{"since"}},
			{"unparseable since", map[string]any{"since": "yesterday"}, []string{"since"}},
			{"since in the future", map[string]any{"since": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, []string{"since"}},
			{"unparseable until", map[string]any{"since": hourAgo, "until": "2026-13-01T00:00:00Z"}, []string{"until"}},
			{"since after until", map[string]any{"since": hourAgo, "until": time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339)}, []string{"until"}},
			{"since equal to until", map[string]any{"since": hourAgo, "until": hourAgo}, []string{"until"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				wantDetails(t, e.on(t).call("POST", path, e.admin, c.body), c.fields...)
			})
		}
		wantErrorBody(t, e.call("POST", path, e.admin, map[string]any{"since": hourAgo, "extra": 1}).want(400), "invalid_request")
		wantErrorBody(t, e.call("POST", "/api/admin/webhook-endpoints/"+theirEP+"/recover", e.admin, map[string]any{"since": hourAgo}).want(404), "not_found")
		wantErrorBody(t, e.call("POST", "/api/admin/webhook-endpoints/whe_01jzzzzzzzzzzzzzzzzzzzzzzz/recover", e.admin, map[string]any{"since": hourAgo}).want(404), "not_found")

		e.call("PATCH", "/api/admin/webhook-endpoints/"+ep, e.admin, map[string]any{"enabled": false}).want(200)
		wantErrorBody(t, e.call("POST", path, e.admin, map[string]any{"since": hourAgo}).want(409), "conflict")
		if n := starter.count(); n != 0 {
			t.Fatalf("%d workflows started by refused recoveries", n)
		}
		// No recovery was recorded: the first that is has number 1.
		e.call("PATCH", "/api/admin/webhook-endpoints/"+ep, e.admin, map[string]any{"enabled": true}).want(200)
		starter.err = serviceerror.NewUnavailable("connection refused")
		wantErrorBody(t, e.call("POST", path, e.admin, map[string]any{"since": hourAgo}).want(503), "unavailable")
		starter.err = nil
		ok := e.call("POST", path, e.admin, map[string]any{"since": hourAgo}).want(202).json()
		if ok["workflow_id"] != "webhook-recovery/"+ep+"/2" {
			t.Errorf("recovery after a refused start %v: want number 2 (1 is the one Temporal refused)", ok)
		}
		// Status: a foreign endpoint's recovery, or a recovery under another endpoint, is 404.
		id := ok["recovery_id"].(string)
		e.call("GET", "/api/admin/webhook-endpoints/"+ep+"/recoveries/"+id, e.admin, nil).want(200)
		wantErrorBody(t, theirs.call("GET", "/api/admin/webhook-endpoints/"+ep+"/recoveries/"+id, theirs.admin, nil).want(404), "not_found")
		wantErrorBody(t, e.call("GET", "/api/admin/webhook-endpoints/"+theirEP+"/recoveries/"+id, e.admin, nil).want(404), "not_found")
		wantErrorBody(t, e.call("GET", "/api/admin/webhook-endpoints/"+ep+"/recoveries/rcv_01jzzzzzzzzzzzzzzzzzzzzzzz", e.admin, nil).want(404), "not_found")
	})
}

// TestRecoverWithoutRecoverer: a process that cannot start workflows
// answers 503, after the endpoint is found.
func TestRecoverWithoutRecoverer(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		wantErrorBody(t, e.call("POST", "/api/admin/webhook-endpoints/"+ep+"/recover", e.admin, map[string]any{"since": since}).want(503), "unavailable")
		e.call("POST", "/api/admin/webhook-endpoints/whe_01jzzzzzzzzzzzzzzzzzzzzzzz/recover", e.admin, map[string]any{"since": since}).want(404)
	})
}

// TestRecoveryStatusChecksWorkflow: a recovery whose row says running is
// checked against its workflow when its status is read, once it is past
// its start: a workflow that does not exist (the API stopped between the
// row and the start) or that closed without recording its end
// (terminated) makes it failed, keeping its counts; a running or continued
// workflow, a Temporal that does not answer, and a recovery in its first
// seconds leave it running; a finished recovery is not checked.
func TestRecoveryStatusChecksWorkflow(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		store := storetest.Open(t, d)
		var offset atomic.Int64
		start := time.Now()
		clock := func() time.Time { return start.Add(time.Duration(offset.Load())) }
		desc := &fakeDescriber{}
		e := newEnvOn(t, store, withRecoverer(recoverer{&workflows.Recoveries{Starter: &fakeStarter{}, Describer: desc, Store: store, Now: clock}}))
		ep := e.createEndpoint(map[string]any{"url": "https://hooks.example.com/a", "events": []string{"record_created"}})["id"].(string)
		since := start.Add(-time.Hour).UTC().Format(time.RFC3339)
		begin := func() string {
			return e.call("POST", "/api/admin/webhook-endpoints/"+ep+"/recover", e.admin, map[string]any{"since": since}).want(202).json()["recovery_id"].(string)
		}
		status := func(id string) map[string]any {
			return e.call("GET", "/api/admin/webhook-endpoints/"+ep+"/recoveries/"+id, e.admin, nil).want(200).json()
		}

		lost := begin()
		if err := store.SetRecoveryProgress(context.Background(), lost, models.RecoveryProgress{Found: 5, Replayed: 4, Failed: 1}); err != nil {
			t.Fatal(err)
		}
		// In its first seconds its workflow may still be starting.
		desc.set(0, serviceerror.NewNotFound("workflow not found"))
		if s := status(lost); s["status"] != "running" || desc.count() != 0 {
			t.Fatalf("a recovery just started: %v after %d describes, want running and none", s, desc.count())
		}
		offset.Store(int64(time.Minute))
		for _, c := range []struct {
			status enumspb.WorkflowExecutionStatus
			err    error
		}{
			{enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil},
			{enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, nil},
			{0, serviceerror.NewUnavailable("connection refused")},
		} {
			before := desc.set(c.status, c.err)
			if s := status(lost); s["status"] != "running" || s["error"] != nil || desc.count() != before+1 {
				t.Errorf("workflow %s / %v: %v, want running after one describe", c.status, c.err, s)
			}
		}
		desc.set(0, serviceerror.NewNotFound("workflow not found"))
		s := status(lost)
		if s["status"] != "failed" || s["finished_at"] == nil || s["found"] != 5.0 || s["replayed"] != 4.0 || s["failed"] != 1.0 ||
			!strings.Contains(fmt.Sprint(s["error"]), "does not exist") {
			t.Errorf("a recovery without its workflow: %v, want failed with its counts and why", s)
		}
		// Once failed it is not described again, and stays failed.
		calls := desc.set(enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil)
		if again := status(lost); again["status"] != "failed" || desc.count() != calls {
			t.Errorf("a failed recovery read again: %v after %d more describes", again, desc.count()-calls)
		}

		terminated := begin()
		offset.Store(int64(2 * time.Minute))
		desc.set(enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, nil)
		if s := status(terminated); s["status"] != "failed" || !strings.Contains(fmt.Sprint(s["error"]), "ended (terminated)") {
			t.Errorf("a terminated recovery: %v, want failed, saying terminated", s)
		}

		// A recovery that finished meanwhile keeps its own end: the check
		// writes only over a running row.
		done := begin()
		offset.Store(int64(3 * time.Minute))
		if err := store.FinishRecovery(context.Background(), done, models.RecoveryCompleted, models.RecoveryProgress{Found: 2, Replayed: 2}, "", clock()); err != nil {
			t.Fatal(err)
		}
		calls = desc.set(enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, nil)
		if s := status(done); s["status"] != "completed" || s["error"] != nil || desc.count() != calls {
			t.Errorf("a completed recovery: %v after %d describes, want completed and none", s, desc.count()-calls)
		}
	})
}
