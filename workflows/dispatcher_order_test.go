package workflows

import (
	"fmt"
	"slices"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestDispatcherOrdered: for an endpoint whose ordering is "record", a
// batch's events of one record are handed to the record's sequencer in
// version order, one after another; after a failed signal the record's
// later events are not signalled and stay pending (released), while
// another record's and the unordered endpoint's go on.
func TestDispatcherOrdered(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			f := newFixture(t, d)
			ordered := f.orderedEndpoint(t)
			ev := f.record(t)
			var a []*models.Event
			a = append(a, ev)
			f.update(t, ev.RecordID, 3)
			other := f.record(t)
			pending := f.pending(t)
			for i := range pending {
				if pending[i].RecordID == ev.RecordID && pending[i].RecordVersion > 1 {
					a = append(a, &pending[i])
				}
			}
			if len(a) != 4 {
				t.Fatalf("%d events of the record, want 4", len(a))
			}
			starter := newFakeStarter()
			// Version 3's signal fails: 4 must not be signalled.
			starter.setFail(func(id string) error {
				if id == WorkflowID(a[2].ID, ordered.ID) {
					return errUnavailable
				}
				return nil
			})
			disp := newDispatcher(f, starter)
			disp.BatchSize = 100
			if _, err := disp.DispatchOnce(ctx); err == nil {
				t.Fatal("a round with a failed signal answered no error")
			}
			// The record's versions 1 and 2 are signalled, 3 fails and 4
			// waits for it. The other record's event may or may not have
			// started before the failure stopped the round (its starts run
			// concurrently); if not, it is pending.
			var got []string
			otherStarted := false
			for _, s := range starter.signalled() {
				if s.id != SequenceWorkflowID(ordered.ID, s.d.Delivery.RecordID) {
					t.Errorf("signal to %s for record %s", s.id, s.d.Delivery.RecordID)
				}
				if s.d.Delivery.EventID == other.ID {
					otherStarted = true
					continue
				}
				got = append(got, fmt.Sprintf("%s v%d", s.d.Delivery.EventID, s.d.RecordVersion))
			}
			want := []string{fmt.Sprintf("%s v1", a[0].ID), fmt.Sprintf("%s v2", a[1].ID)}
			if !slices.Equal(got, want) {
				t.Errorf("the record's signals %v, want %v", got, want)
			}
			var left []string
			for _, p := range f.pending(t) {
				left = append(left, p.ID)
				if p.ClaimedBy != nil {
					t.Errorf("event %s still claimed", p.ID)
				}
			}
			wantLeft := []string{a[2].ID, a[3].ID}
			if !otherStarted {
				wantLeft = append(wantLeft, other.ID)
			}
			slices.Sort(left)
			slices.Sort(wantLeft)
			if !slices.Equal(left, wantLeft) {
				t.Errorf("pending %v, want %v", left, wantLeft)
			}
			// The next round goes on from version 3: every event signalled
			// once, the record's in version order.
			starter.setFail(nil)
			if _, err := disp.DispatchOnce(ctx); err != nil {
				t.Fatal(err)
			}
			var versions []int
			seen := map[string]int{}
			for _, s := range starter.signalled() {
				seen[s.d.Delivery.EventID]++
				if s.d.Delivery.RecordID == ev.RecordID {
					versions = append(versions, int(s.d.RecordVersion))
				}
			}
			if !slices.Equal(versions, []int{1, 2, 3, 4}) || len(seen) != 5 || seen[other.ID] != 1 {
				t.Errorf("signals after the second round: the record's versions %v, want [1 2 3 4]; per event %v", versions, seen)
			}
		})
	}
}

// TestDispatcherOrderedInParts: a record's events that an ordered endpoint
// and twenty others want, each more than a round starts: every event's
// deliveries are started over several rounds, and none of a later
// version's before all of the earlier one's; the ordered endpoint's
// signals come in version order.
func TestDispatcherOrderedInParts(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			f := newFixture(t, d)
			ordered := f.orderedEndpoint(t)
			for range 20 {
				f.endpoint(t, 3, models.EventRecordCreated, models.EventRecordUpdated)
			}
			ev := f.record(t)
			f.update(t, ev.RecordID, 2)
			version := map[string]int64{}
			for _, p := range f.pending(t) {
				version[p.ID] = p.RecordVersion
			}
			starter := newFakeStarter()
			disp := newDispatcher(f, starter)
			disp.RoundStarts = 8
			for i := 0; len(f.pending(t)) > 0; i++ {
				if i > 100 {
					t.Fatal("events still pending after 100 rounds")
				}
				if _, err := disp.DispatchOnce(ctx); err != nil {
					t.Fatal(err)
				}
			}
			var versions []int64
			for _, c := range starter.starts() {
				versions = append(versions, version[c.in.EventID])
			}
			// f.subscribed wants record_created only: 21 starts of v1, 20 of v2 and v3.
			if !slices.IsSorted(versions) || len(versions) != 61 {
				t.Errorf("versions of the %d starts in their order: %v; want 61, in version order", len(versions), versions)
			}
			var signalled []int64
			for _, s := range starter.signalled() {
				if s.id == SequenceWorkflowID(ordered.ID, ev.RecordID) {
					signalled = append(signalled, s.d.RecordVersion)
				}
			}
			if !slices.Equal(signalled, []int64{1, 2, 3}) {
				t.Errorf("ordered endpoint's signals by version %v, want [1 2 3]", signalled)
			}
		})
	}
}
