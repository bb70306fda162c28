package models_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

func eventOf(t *testing.T, s *models.Store, recordID string) string {
	t.Helper()
	evs, err := s.PendingEvents(context.Background(), 100_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.RecordID == recordID {
			return e.ID
		}
	}
	t.Fatalf("no pending event of record %s", recordID)
	return ""
}

// TestClaimEventsFair: a claim serves every tenant with pending events an
// equal share, oldest first within each, so that tenant B's one event is in
// the first round although tenant A has a backlog far larger than a round.
func TestClaimEventsFair(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		a, b := newOutboxTenant(t, s, "a"), newOutboxTenant(t, s, "b")
		aIDs := a.events(t, s, 60)
		bIDs := b.events(t, s, 1)

		got, err := s.ClaimEvents(ctx, models.Claim{Owner: "one", Limit: 20, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		want := append(slices.Clone(aIDs[:10]), bIDs...)
		if g := ids(got); !sameSet(g, want) {
			t.Errorf("first round claimed %v,\nwant A's 10 oldest and B's one: %v", g, want)
		}
		for _, e := range got {
			if e.ClaimedBy == nil || *e.ClaimedBy != "one" || e.ClaimedUntil == nil || e.Payload == "" {
				t.Errorf("claimed event %s: by %v until %v, payload %d bytes", e.ID, e.ClaimedBy, e.ClaimedUntil, len(e.Payload))
			}
		}
		// B has nothing left to claim (its event is claimed, not yet
		// dispatched, so it still counts for a share): A's next ones.
		got, err = s.ClaimEvents(ctx, models.Claim{Owner: "one", Limit: 20, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if g := ids(got); len(g) < 10 || !slices.Equal(g, aIDs[10:10+len(g)]) {
			t.Errorf("second round claimed %v, want A's next ten or more, in order", g)
		}
	})
}

// TestClaimEventsLease: a live claim keeps other dispatchers off; when its
// lease ends (the owner died) another takes the events over; a release
// frees them at once, and only the owner's release counts.
func TestClaimEventsLease(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s := storetest.NewDB(t, d).Open(t, models.Options{Now: clock.Now})
		tn := newOutboxTenant(t, s, "t")
		evs := tn.events(t, s, 3)
		claim := func(owner string) []string {
			t.Helper()
			got, err := s.ClaimEvents(ctx, models.Claim{Owner: owner, Limit: 10, Lease: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return ids(got)
		}

		if got := claim("dead"); !sameSet(got, evs) {
			t.Fatalf("first claim %v, want %v", got, evs)
		}
		clock.Advance(29 * time.Second)
		if got := claim("live"); len(got) != 0 {
			t.Errorf("claimed %v under another's lease", got)
		}
		clock.Advance(2 * time.Second)
		if got := claim("live"); !sameSet(got, evs) {
			t.Errorf("after the lease: claimed %v, want %v", got, evs)
		}
		// The dead owner wakes up: its release must not free live's claims.
		if err := s.ReleaseEvents(ctx, "dead", evs); err != nil {
			t.Fatal(err)
		}
		if got := claim("third"); len(got) != 0 {
			t.Errorf("a stale owner's release freed %v", got)
		}
		if err := s.MarkDispatched(ctx, evs[:1]); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseEvents(ctx, "live", evs); err != nil {
			t.Fatal(err)
		}
		if got := claim("third"); !sameSet(got, evs[1:]) {
			t.Errorf("after the release: claimed %v, want the two not dispatched %v", got, evs[1:])
		}
	})
}

// TestClaimEventsConcurrent: dispatchers of two processes (two stores on
// one database) claiming at the same moment never get the same event, and
// between them get every one.
func TestClaimEventsConcurrent(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		db := storetest.NewDB(t, d)
		stores := []*models.Store{db.Open(t, models.Options{}), db.Open(t, models.Options{})}
		var all []string
		for i, name := range []string{"a", "b", "c"} {
			tn := newOutboxTenant(t, stores[i%2], name)
			all = append(all, tn.events(t, stores[i%2], 60)...)
		}
		var (
			mu      sync.Mutex
			claimed = map[string]string{}
			wg      sync.WaitGroup
		)
		for i, s := range stores {
			for g := range 2 {
				owner := string(rune('p'+i)) + string(rune('0'+g))
				wg.Go(func() {
					for {
						got, err := s.ClaimEvents(ctx, models.Claim{Owner: owner, Limit: 7, Lease: time.Minute})
						if err != nil {
							t.Error(err)
							return
						}
						if len(got) == 0 {
							return
						}
						mu.Lock()
						for _, e := range got {
							if prev, ok := claimed[e.ID]; ok {
								t.Errorf("event %s claimed by %s and by %s", e.ID, prev, owner)
							}
							claimed[e.ID] = owner
						}
						mu.Unlock()
						if err := s.MarkDispatched(ctx, ids(got)); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		if len(claimed) != len(all) {
			t.Errorf("%d of %d events claimed", len(claimed), len(all))
		}
		left, err := stores[0].PendingEvents(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("%d events still pending", len(left))
		}
	})
}
