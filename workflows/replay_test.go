package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestReplay: each replay is a new execution, replay-1, replay-2, …, of the
// same event to the same endpoint, whose attempts carry replay_of.
func TestReplay(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			f := newFixture(t, d)
			ev := f.record(t)
			row := &models.WebhookDelivery{
				TenantID: f.tenantID, EventID: ev.ID, EventType: ev.Type, EndpointID: f.subscribed.ID,
				WorkflowID: WorkflowID(ev.ID, f.subscribed.ID), RunID: "run-1", Attempt: 5,
				RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{},
				StartedAt: time.Now(), FinishedAt: time.Now(), Error: models.DeliveryErrHTTPStatus,
			}
			if err := f.store.InsertAttempt(ctx, row); err != nil {
				t.Fatal(err)
			}
			starter := newFakeStarter()
			replayer := &Replayer{Starter: starter, Store: f.store, Policy: testPolicy}
			for n, want := range []string{
				WorkflowID(ev.ID, f.subscribed.ID) + "/replay-1",
				WorkflowID(ev.ID, f.subscribed.ID) + "/replay-2",
			} {
				wid, rid, err := replayer.Replay(ctx, row)
				if err != nil {
					t.Fatal(err)
				}
				if wid != want || rid != "run-"+want {
					t.Errorf("replay %d: %s, %s; want %s", n+1, wid, rid, want)
				}
			}
			starts := starter.starts()
			if len(starts) != 2 {
				t.Fatalf("%d starts, want 2", len(starts))
			}
			for _, s := range starts {
				want := DeliveryInput{
					TenantID: f.tenantID, EventID: ev.ID, EventType: ev.Type, EndpointID: f.subscribed.ID,
					ModuleID: f.module.ID, RecordID: ev.RecordID, ReplayOf: row.ID, RetryMax: 7, Policy: testPolicy,
				}
				if diff := cmp.Diff(want, s.in); diff != "" {
					t.Errorf("replay input (-want +got):\n%s", diff)
				}
				o := s.opts
				if o.TaskQueue != DefaultTaskQueue || o.Priority.FairnessKey != f.tenantID || o.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE ||
					o.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL || !o.EnableEagerStart {
					t.Errorf("replay start options %+v", o)
				}
				if v, ok := o.TypedSearchAttributes.GetKeyword(EndpointAttr); !ok || v != f.subscribed.ID {
					t.Errorf("replay's %s = %q", EndpointAttr.GetName(), v)
				}
			}

			// A failed start uses up its number; the next replay goes on.
			// Temporal unreachable is 503 unavailable, other failures are
			// passed on.
			starter.setFail(func(string) error { return errUnavailable })
			if _, _, err := replayer.Replay(ctx, row); err == nil || models.ErrorKind(err) != models.KindUnavailable {
				t.Fatalf("got %v, want unavailable", err)
			}
			errBad := errors.New("bad request")
			starter.setFail(func(string) error { return errBad })
			if _, _, err := replayer.Replay(ctx, row); !errors.Is(err, errBad) {
				t.Fatalf("got %v, want the start's error", err)
			}
			starter.setFail(nil)
			wid, _, err := replayer.Replay(ctx, row)
			if err != nil {
				t.Fatal(err)
			}
			if want := ReplayWorkflowID(ev.ID, f.subscribed.ID, 5); wid != want {
				t.Errorf("replay after a failed one: %s, want %s", wid, want)
			}

			// A deployment's own task queue.
			replayer.TaskQueue = "deployment-b"
			if _, _, err := replayer.Replay(ctx, row); err != nil {
				t.Fatal(err)
			}
			if s := starter.starts(); s[len(s)-1].opts.TaskQueue != "deployment-b" {
				t.Errorf("replay on %q, want deployment-b", s[len(s)-1].opts.TaskQueue)
			}

			// A deleted endpoint cannot be replayed to: 409.
			if err := f.store.DeleteEndpoint(ctx, f.tenantID, f.subscribed.ID); err != nil {
				t.Fatal(err)
			}
			calls := starter.numCalls()
			if _, _, err := replayer.Replay(ctx, row); err == nil || models.ErrorKind(err) != models.KindConflict {
				t.Errorf("replay to a deleted endpoint: %v, want a conflict", err)
			}
			if starter.numCalls() != calls {
				t.Error("a replay to a deleted endpoint was started")
			}
		})
	}
}
