package workflows

import (
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestRecoveryCappedThenNext: a recovery with a small cap, on a real
// Temporal server run in-process, stops at the cap completed and capped;
// the next one, started from its next_since with its until, as the README
// tells support staff, replays exactly the events it left, under the
// next number. Every failed event is replayed once and arrives.
func TestRecoveryCappedThenNext(t *testing.T) {
	const events, maxEvents = 20, 12
	c := recoveryTemporal(t)
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			rig := newRecoveryRig(t, c, d)
			rig.worker(rig.replayer)
			rig.failDeliveries(events)
			rig.receiverBack()

			recoveries := &Recoveries{Starter: c, Store: rig.store, TaskQueue: rig.queue, PageSize: 5, MaxEvents: maxEvents}
			first, err := recoveries.Start(ctx, rig.tenantID, rig.ep.ID, time.Now().Add(-time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			done := rig.waitRecovery(first.ID)
			if done.Status != models.RecoveryCompleted || !done.Capped || done.Found != maxEvents || done.Replayed != maxEvents ||
				done.NextSince == nil || done.CappedAtEventID == nil {
				t.Fatalf("first recovery %s (%q), capped %v, found %d, replayed %d, next since %v; want completed, capped at %d with where to go on",
					done.Status, done.Error, done.Capped, done.Found, done.Replayed, done.NextSince, maxEvents)
			}

			// Its replays arrive first: an event it took that was written
			// in the same millisecond as the first one it left is then
			// not found again (it has succeeded).
			storetest.WhileProgressing(t, time.Minute, "the first recovery's replays to succeed", func() (int, bool) {
				n := rig.count(models.DeliveryQuery{Succeeded: ptr(true)})
				return int(n), n >= maxEvents
			})
			until := done.WindowUntil
			second, err := recoveries.Start(ctx, rig.tenantID, rig.ep.ID, *done.NextSince, &until)
			if err != nil {
				t.Fatal(err)
			}
			if want := RecoveryWorkflowID(rig.ep.ID, 2); second.WorkflowID != want {
				t.Errorf("second recovery %s, want %s", second.WorkflowID, want)
			}
			next := rig.waitRecovery(second.ID)
			if next.Status != models.RecoveryCompleted || next.Capped || next.Found != events-maxEvents || next.Replayed != events-maxEvents {
				t.Fatalf("second recovery %s (%q), capped %v, found %d, replayed %d; want completed, not capped, %d each",
					next.Status, next.Error, next.Capped, next.Found, next.Replayed, events-maxEvents)
			}

			storetest.WhileProgressing(t, time.Minute, "every event's replay to succeed", func() (int, bool) {
				ok := map[string]bool{}
				for _, r := range rig.rows() {
					if r.ReplayOf != nil && r.Succeeded {
						ok[r.EventID] = true
					}
				}
				return len(ok), len(ok) == events
			})
			replays := map[string]map[string]bool{}
			for _, r := range rig.rows() {
				if r.ReplayOf == nil {
					continue
				}
				if replays[r.EventID] == nil {
					replays[r.EventID] = map[string]bool{}
				}
				replays[r.EventID][r.WorkflowID] = true
			}
			if len(replays) != events {
				t.Errorf("%d events replayed, want %d", len(replays), events)
			}
			for ev, wids := range replays {
				if len(wids) != 1 {
					t.Errorf("event %s replayed by %d executions, want 1", ev, len(wids))
				}
			}
		})
	}
}
