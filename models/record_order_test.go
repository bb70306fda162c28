package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestEventRecordVersion: a record's events carry the version in their
// payload, the events of one change the same one, and a deletion the last
// version plus one; operational events 0.
func TestEventRecordVersion(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
		if err != nil {
			t.Fatal(err)
		}
		fields := []models.Field{
			{Name: "title", Type: models.TypeString},
			{Name: "stage", Type: models.TypeStatus, States: []string{"a", "b"}, Initial: "a"},
		}
		slug := "things"
		m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &slug, Fields: &fields})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.CreateRecord(ctx, m, map[string]any{"title": "one"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.UpdateRecord(ctx, m, r.ID, models.RecordPatch{Fields: map[string]any{"title": "two", "stage": "b"}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteRecord(ctx, m, r.ID); err != nil {
			t.Fatal(err)
		}
		evs, err := s.PendingEvents(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			var body struct {
				Record struct {
					Version int64 `json:"version"`
				} `json:"record"`
			}
			if err := json.Unmarshal([]byte(e.Payload), &body); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s v%d payload v%d", e.Type, e.RecordVersion, body.Record.Version))
		}
		want := []string{
			"record_created v1 payload v1", "record_updated v2 payload v2", "status_change v2 payload v2",
			"record_deleted v3 payload v2",
		}
		if !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

// TestClaimEventsRecordOrder: a record's event is handed out only when
// every earlier one was marked dispatched, or comes in the same batch; an
// earlier one claimed by another dispatcher holds the later ones back (and
// releases them: they are not claimed), other records' events flow.
func TestClaimEventsRecordOrder(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		o := newOutboxTenant(t, s, "t")
		r, err := s.CreateRecord(ctx, o.module, map[string]any{"title": "v1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, title := range []string{"v2", "v3"} {
			if _, _, err := s.UpdateRecord(ctx, o.module, r.ID, models.RecordPatch{Fields: map[string]any{"title": title}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(owner string, limit int) []models.Event {
			t.Helper()
			evs, err := s.ClaimEvents(ctx, models.Claim{Owner: owner, Limit: limit, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return evs
		}
		versions := func(evs []models.Event) []int64 {
			var out []int64
			for _, e := range evs {
				out = append(out, e.RecordVersion)
			}
			return out
		}
		a := claim("a", 1)
		if got := versions(a); !slices.Equal(got, []int64{1}) {
			t.Fatalf("a claimed versions %v, want [1]", got)
		}
		if got := claim("b", 10); len(got) != 0 {
			t.Fatalf("b claimed versions %v while a holds version 1, want none", versions(got))
		}
		// Another record's event is not held back by this one.
		other := o.events(t, s, 1)
		if got := ids(claim("b", 10)); !slices.Equal(got, other) {
			t.Fatalf("b claimed %v, want the other record's %v", got, other)
		}
		if err := s.MarkDispatched(ctx, ids(a)); err != nil {
			t.Fatal(err)
		}
		// The batch holding both 2 and 3 returns both.
		if got := versions(claim("b", 10)); !slices.Equal(got, []int64{2, 3}) {
			t.Fatalf("b claimed versions %v after 1 was dispatched, want [2 3]", got)
		}
	})
}

// TestRecordChangesTimedInVersionOrder: a writer whose clock is behind the
// last change's (another API host) still times its change, and its events,
// after it; so a dispatcher claiming one event at a time meets a record's
// events in version order and is never handed only an event held back
// behind an earlier one it cannot reach.
func TestRecordChangesTimedInVersionOrder(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		var mu sync.Mutex
		now := time.Now().UTC().Truncate(time.Microsecond)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		setClock := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
		s := storetest.OpenWithClock(t, d, clock)
		o := newOutboxTenant(t, s, "t")
		start := clock()
		r, err := s.CreateRecord(ctx, o.module, map[string]any{"title": "v1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The same instant, then clocks an hour and two hours behind.
		for i, at := range []time.Time{start, start.Add(-time.Hour), start.Add(-2 * time.Hour)} {
			setClock(at)
			if _, _, err := s.UpdateRecord(ctx, o.module, r.ID, models.RecordPatch{Fields: map[string]any{"title": fmt.Sprint("v", i+2)}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		setClock(start.Add(-3 * time.Hour))
		if _, err := s.DeleteRecord(ctx, o.module, r.ID); err != nil {
			t.Fatal(err)
		}
		var got []int64
		var last time.Time
		for range 10 {
			evs, err := s.ClaimEvents(ctx, models.Claim{Owner: "a", Limit: 1, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			if !evs[0].OccurredAt.After(last) {
				t.Errorf("version %d timed %s, not after the previous event's %s", evs[0].RecordVersion, evs[0].OccurredAt, last)
			}
			last = evs[0].OccurredAt
			got = append(got, evs[0].RecordVersion)
			if err := s.MarkDispatched(ctx, ids(evs)); err != nil {
				t.Fatal(err)
			}
		}
		if want := []int64{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
			t.Fatalf("claimed one at a time: versions %v, want %v", got, want)
		}
	})
}

// TestClaimEventsRecordOrderConcurrent: dispatchers claiming concurrently
// in small batches never get an event of a record before every earlier one
// was dispatched or is in their own batch, and together dispatch all.
func TestClaimEventsRecordOrderConcurrent(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		o := newOutboxTenant(t, s, "t")
		const records, updates = 4, 15
		for range records {
			r, err := s.CreateRecord(ctx, o.module, map[string]any{"title": "0"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range updates {
				if _, _, err := s.UpdateRecord(ctx, o.module, r.ID, models.RecordPatch{Fields: map[string]any{"title": fmt.Sprint(i + 1)}}, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		var (
			mu         sync.Mutex
			dispatched = map[string]int64{} // record → highest version dispatched
			total      int
			wg         sync.WaitGroup
		)
		for w := range 3 {
			wg.Go(func() {
				owner := fmt.Sprint("owner-", w)
				idle := 0
				for idle < 50 {
					evs, err := s.ClaimEvents(ctx, models.Claim{Owner: owner, Limit: 3, Lease: time.Minute})
					if err != nil {
						t.Error(err)
						return
					}
					if len(evs) == 0 {
						mu.Lock()
						finished := total == records*(updates+1)
						mu.Unlock()
						if finished {
							return
						}
						idle++
						continue
					}
					idle = 0
					slices.SortFunc(evs, func(a, b models.Event) int { return int(a.RecordVersion - b.RecordVersion) })
					mu.Lock()
					for _, e := range evs {
						if e.RecordVersion != dispatched[e.RecordID]+1 {
							t.Errorf("%s got version %d of %s, after %d was dispatched", owner, e.RecordVersion, e.RecordID, dispatched[e.RecordID])
						}
						dispatched[e.RecordID] = e.RecordVersion
						total++
					}
					mu.Unlock()
					if err := s.MarkDispatched(ctx, ids(evs)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if total != records*(updates+1) {
			t.Errorf("%d events dispatched, want %d", total, records*(updates+1))
		}
	})
}
