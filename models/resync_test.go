package models_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

func resyncEndpoint(t *testing.T, s *models.Store, tenantID string, events ...string) *models.WebhookEndpoint {
	t.Helper()
	u := "https://hooks.example.com/" + tenantID
	ep, _, err := s.CreateEndpoint(t.Context(), tenantID, models.EndpointInput{URL: &u, Events: &events}, nil)
	if err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	return ep
}

// resyncPage reads every page of a resync, limit records at a time.
func resyncPage(t *testing.T, s *models.Store, ep *models.WebhookEndpoint, pos string, limit int) map[string]models.ResyncCandidate {
	t.Helper()
	out := map[string]models.ResyncCandidate{}
	var after models.ResyncCursor
	for {
		page, err := s.ResyncPage(t.Context(), models.ResyncPageQuery{Endpoint: ep, Position: pos, After: after, Limit: limit})
		if err != nil {
			t.Fatalf("resync page: %v", err)
		}
		for _, c := range page {
			if _, dup := out[c.Record.ID]; dup {
				t.Fatalf("record %s on two pages", c.Record.ID)
			}
			out[c.Record.ID] = c
		}
		if len(page) < limit {
			return out
		}
		after = models.ResyncCursor{ModuleID: page[len(page)-1].Module.ID, RecordID: page[len(page)-1].Record.ID}
	}
}

func recordEventOf(t *testing.T, s *models.Store, recordID, typ string) string {
	t.Helper()
	evs, err := s.PendingEvents(t.Context(), 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.RecordID == recordID && e.Type == typ {
			return e.ID
		}
	}
	t.Fatalf("no %s event of %s", typ, recordID)
	return ""
}

// A resync is taken at one outbox position: records changed after it are
// left to their live events (covered), the others are sent as snapshots;
// one resync runs per endpoint.
func TestResyncPosition(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		db := storetest.NewDB(t, d)
		s := db.Open(t, models.Options{})
		o := newOutboxTenant(t, s, "resyncing")
		ep := resyncEndpoint(t, s, o.id, models.EventRecordSnapshot, models.EventRecordCreated, models.EventRecordUpdated, models.EventRecordDeleted)
		createsOnly := resyncEndpoint(t, s, o.id, models.EventRecordSnapshot, models.EventRecordCreated)
		recs := map[string]*models.Record{}
		for _, name := range []string{"a", "b", "c", "d"} {
			r, err := s.CreateRecord(ctx, o.module, map[string]any{"title": name}, nil)
			if err != nil {
				t.Fatal(err)
			}
			recs[name] = r
		}
		wid := func(n int) string { return "resync-" + ep.ID + "-" + string(rune('0'+n)) }
		rs, err := s.CreateResync(ctx, ep, time.Now(), wid)
		if err != nil {
			t.Fatalf("create resync: %v", err)
		}
		if rs.N != 1 || rs.Total != 4 || rs.Position == "" || rs.Status != models.ResyncRunning {
			t.Fatalf("resync = %+v, want n 1, total 4, a position, running", rs)
		}
		_, err = s.CreateResync(ctx, ep, time.Now(), wid)
		var running *models.ResyncRunningError
		if !errors.As(err, &running) || running.Running.ID != rs.ID || kindOf(err) != models.KindConflict {
			t.Fatalf("second resync: %v, want a conflict naming %s", err, rs.ID)
		}

		// After the position: b updated, c deleted, e created.
		if _, _, err := s.UpdateRecord(ctx, o.module, recs["b"].ID, models.RecordPatch{Fields: map[string]any{"title": "b2"}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteRecord(ctx, o.module, recs["c"].ID); err != nil {
			t.Fatal(err)
		}
		e, err := s.CreateRecord(ctx, o.module, map[string]any{"title": "e"}, nil)
		if err != nil {
			t.Fatal(err)
		}

		got := resyncPage(t, s, ep, rs.Position, 2)
		want := map[string]bool{recs["a"].ID: false, recs["b"].ID: true, recs["d"].ID: false, e.ID: true}
		if len(got) != len(want) {
			t.Fatalf("resync pages hold %d records, want %d (c deleted)", len(got), len(want))
		}
		for id, covered := range want {
			if c, ok := got[id]; !ok || c.Covered != covered {
				t.Errorf("record %s: got %+v, want covered %v", id, c, covered)
			}
		}
		// An endpoint that does not take updates is not covered by them:
		// b goes as a snapshot of its current version.
		got = resyncPage(t, s, createsOnly, rs.Position, 100)
		if c := got[recs["b"].ID]; c.Covered || c.Record.Version != 2 {
			t.Errorf("b to an endpoint without updates: %+v, want a snapshot of version 2", c)
		}

		for _, c := range []struct {
			id    string
			after bool
		}{
			{recordEventOf(t, s, recs["a"].ID, models.EventRecordCreated), false},
			{recordEventOf(t, s, recs["b"].ID, models.EventRecordUpdated), true},
			{recordEventOf(t, s, e.ID, models.EventRecordCreated), true},
		} {
			if after := db.EventsCommittedAfter(t, rs.Position)[c.id]; after != c.after {
				t.Errorf("event %s after the position: %v; want %v", c.id, after, c.after)
			}
		}

		// Snapshot events are the same when made again, stored once, and
		// never pending for the dispatcher.
		a := got[recs["a"].ID]
		ev1, err := models.SnapshotEvent(rs, &a)
		if err != nil {
			t.Fatal(err)
		}
		ev2, _ := models.SnapshotEvent(rs, &a)
		if ev1.ID != ev2.ID || ev1.Payload != ev2.Payload {
			t.Fatalf("snapshot made twice differs: %s / %s", ev1.ID, ev2.ID)
		}
		for range 2 {
			if err := s.SaveSnapshots(ctx, []models.Event{ev1}); err != nil {
				t.Fatalf("save snapshots: %v", err)
			}
		}
		pending, err := s.PendingEvents(ctx, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(pending, func(e models.Event) bool { return e.Type == models.EventRecordSnapshot }) {
			t.Fatal("a snapshot event is pending for the dispatcher")
		}
		stored, err := s.GetEvent(ctx, o.id, ev1.ID)
		if err != nil || stored.Payload != ev1.Payload || stored.RecordVersion != a.Record.Version {
			t.Fatalf("stored snapshot: %v %v", stored, err)
		}

		// A snapshot is superseded for an endpoint when a live event of
		// its record that the endpoint takes was committed after the
		// position: b's update, for ep; not for createsOnly, nor for a.
		b := got[recs["b"].ID]
		evB, err := models.SnapshotEvent(rs, &b)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			ev   *models.Event
			ep   *models.WebhookEndpoint
			want bool
		}{{"a", &ev1, ep, false}, {"b", &evB, ep, true}, {"b without updates", &evB, createsOnly, false}} {
			if sup, err := s.SnapshotSuperseded(ctx, c.ev, c.ep); err != nil || sup != c.want {
				t.Errorf("snapshot of %s superseded: %v, %v; want %v", c.name, sup, err, c.want)
			}
		}

		p := models.ResyncProgress{Examined: 4, Sent: 2, Covered: 2}
		if err := s.FinishResync(ctx, rs.ID, models.ResyncCompleted, p, "", time.Now()); err != nil {
			t.Fatal(err)
		}
		done, err := s.GetResync(ctx, o.id, ep.ID, rs.ID)
		if err != nil || done.Status != models.ResyncCompleted || done.Sent != 2 || done.FinishedAt == nil {
			t.Fatalf("finished resync: %+v %v", done, err)
		}
		if _, err := s.GetResync(ctx, "tnt_other", ep.ID, rs.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("another tenant's read: %v, want not found", err)
		}
		next, err := s.CreateResync(ctx, ep, time.Now(), wid)
		if err != nil || next.N != 2 {
			t.Fatalf("next resync: %+v %v, want number 2", next, err)
		}
		// Retention takes finished resyncs with the delivery attempts,
		// never a running one; numbers go on from the endpoint's counter.
		if _, err := s.Purge(ctx, models.PurgeDeliveries, time.Now().Add(time.Hour), 100); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetResync(ctx, o.id, ep.ID, rs.ID); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("finished resync after the purge: %v, want gone", err)
		}
		if _, err := s.GetResync(ctx, o.id, ep.ID, next.ID); err != nil {
			t.Fatalf("running resync after the purge: %v", err)
		}
	})
}

// On PostgreSQL an event written before the resync's position was taken
// but committed after it is live: the position is a snapshot of committed
// transactions, not a number taken at write time.
func TestResyncPositionLateCommit(t *testing.T) {
	db := storetest.NewDB(t, models.Postgres)
	s := db.Open(t, models.Options{})
	ctx := t.Context()
	o := newOutboxTenant(t, s, "late")
	ep := resyncEndpoint(t, s, o.id, models.EventRecordSnapshot, models.EventRecordUpdated)
	r, err := s.CreateRecord(ctx, o.module, map[string]any{"title": "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := db.SQL(t)
	tx, err := h.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	late := models.NewID(models.PrefixEvent)
	if _, err := tx.Exec(db.Rebind("INSERT INTO events (id, tenant_id, module_id, record_id, type, payload, occurred_at) VALUES (?, ?, ?, ?, ?, '{}', NOW())"),
		late, o.id, o.module.ID, r.ID, models.EventRecordUpdated); err != nil {
		t.Fatal(err)
	}
	rs, err := s.CreateResync(ctx, ep, time.Now(), func(n int) string { return "resync-late" })
	if err != nil {
		t.Fatal(err)
	}
	if got := resyncPage(t, s, ep, rs.Position, 10); got[r.ID].Covered {
		t.Fatal("covered by an event not committed yet")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if !db.EventsCommittedAfter(t, rs.Position)[late] {
		t.Fatal("event committed after the position: not after, want after")
	}
	if got := resyncPage(t, s, ep, rs.Position, 10); !got[r.ID].Covered {
		t.Fatal("not covered by an event committed after the position")
	}
}
