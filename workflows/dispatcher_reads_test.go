package workflows

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestDispatcherReadsEndpointsOncePerTenant: a round reads each tenant's
// endpoints once, however many types and modules its events are of (one
// change writes events of several types), and still starts each event's
// deliveries to exactly the endpoints subscribed to it.
func TestDispatcherReadsEndpointsOncePerTenant(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			var reads atomic.Int64
			s := storetest.NewDB(t, d).Open(t, models.Options{OnStatement: func(q string) {
				if strings.Contains(q, "webhook_endpoints") {
					reads.Add(1)
				}
			}})
			a, b := newFixtureOn(t, s), newFixtureOn(t, s)
			updated := a.endpoint(t, 3, models.EventRecordUpdated)
			created := a.record(t)
			if _, _, err := s.UpdateRecord(ctx, a.module, created.RecordID, models.RecordPatch{Fields: map[string]any{"title": "y"}}, nil); err != nil {
				t.Fatal(err)
			}
			otherTenant := b.record(t)
			var update models.Event
			for _, ev := range a.pending(t) {
				if ev.Type == models.EventRecordUpdated {
					update = ev
				}
			}
			if update.ID == "" {
				t.Fatal("the update wrote no record_updated event")
			}

			starter := newFakeStarter()
			reads.Store(0)
			n, err := newDispatcher(a, starter).DispatchOnce(ctx)
			if err != nil || n != 3 {
				t.Fatalf("DispatchOnce: %d marked, %v; want 3", n, err)
			}
			if got := reads.Load(); got != 2 {
				t.Errorf("the round read endpoints %d times, want 2: once per tenant", got)
			}
			var ids []string
			for _, c := range starter.starts() {
				ids = append(ids, c.opts.ID)
			}
			want := []string{
				WorkflowID(created.ID, a.subscribed.ID), WorkflowID(update.ID, updated.ID), WorkflowID(otherTenant.ID, b.subscribed.ID),
			}
			if diff := cmp.Diff(want, ids, cmpSorted); diff != "" {
				t.Errorf("started workflows (-want +got):\n%s", diff)
			}
		})
	}
}
