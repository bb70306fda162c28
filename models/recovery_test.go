package models_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// recoveryFixture is a tenant whose records write events, with two
// endpoints, and a second tenant with an endpoint of its own, on a store
// whose clock moves only when told to.
type recoveryFixture struct {
	s        *models.Store
	db       *storetest.DB
	clock    *storetest.Clock
	tenant   outboxTenant
	ep, ep2  *models.WebhookEndpoint
	other    outboxTenant
	otherEP  *models.WebhookEndpoint
	recordNo int
}

func newRecoveryEndpoint(t *testing.T, s *models.Store, tenantID string) *models.WebhookEndpoint {
	t.Helper()
	u := "https://hooks.example.com/" + tenantID
	ep, _, err := s.CreateEndpoint(t.Context(), tenantID, models.EndpointInput{URL: &u, Events: &[]string{models.EventRecordCreated}}, nil)
	if err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	return ep
}

// events creates n records of tenant o and returns their events' ids, in
// the order the records were created.
func (f *recoveryFixture) events(t *testing.T, o outboxTenant, n int) []string {
	t.Helper()
	records := make([]string, n)
	for i := range n {
		f.recordNo++
		r, err := f.s.CreateRecord(t.Context(), o.module, map[string]any{"title": fmt.Sprintf("r%d", f.recordNo)}, nil)
		if err != nil {
			t.Fatalf("create record: %v", err)
		}
		records[i] = r.ID
	}
	pending, err := f.s.PendingEvents(t.Context(), 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	byRecord := map[string]string{}
	for _, e := range pending {
		byRecord[e.RecordID] = e.ID
	}
	out := make([]string, n)
	for i, r := range records {
		if out[i] = byRecord[r]; out[i] == "" {
			t.Fatalf("no pending event of record %s", r)
		}
	}
	return out
}

// deleteEvent removes an event's row as retention does: dispatched, then
// purged. No other event of the fixture is dispatched.
func (f *recoveryFixture) deleteEvent(t *testing.T, id string) {
	t.Helper()
	ctx := t.Context()
	if err := f.s.MarkDispatched(ctx, []string{id}); err != nil {
		t.Fatal(err)
	}
	if n, err := f.s.Purge(ctx, models.PurgeEvents, f.clock.Now().Add(time.Second), 100); err != nil || n != 1 {
		t.Fatalf("purge of event %s: %d rows, %v; want 1", id, n, err)
	}
	if _, err := f.s.GetEvent(ctx, f.tenant.id, id); !errors.Is(err, models.ErrNotFound) {
		t.Fatalf("event %s after its purge: %v, want ErrNotFound", id, err)
	}
}

// rowKind is the outcome of a delivery row.
type rowKind int

const (
	rowFailed rowKind = iota
	rowSucceeded
	// rowSkipped: the endpoint was disabled when the event was dispatched
	// (attempt 0, error endpoint_disabled, nothing sent).
	rowSkipped
)

// insertRecoveryRow stores one delivery row of an event to an endpoint,
// started at at, and returns its id.
func insertRecoveryRow(t *testing.T, s *models.Store, tenantID, eventID, endpointID string, kind rowKind, at time.Time) string {
	t.Helper()
	d := &models.WebhookDelivery{
		TenantID: tenantID, EventID: eventID, EventType: models.EventRecordCreated, EndpointID: endpointID,
		WorkflowID: "webhook-delivery/" + eventID + "/" + endpointID, RunID: "run", Attempt: 1,
		RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{}, RequestBody: `{}`,
		ResponseHeaders: models.Headers{}, StartedAt: at, FinishedAt: at.Add(time.Second),
	}
	switch kind {
	case rowFailed:
		d.ResponseStatus, d.Error, d.ErrorMessage = ptr(500), models.DeliveryErrHTTPStatus, "HTTP 500"
	case rowSucceeded:
		d.ResponseStatus, d.Succeeded = ptr(204), true
	case rowSkipped:
		d.ID, d.WorkflowID, d.RunID, d.Attempt = models.SkippedDeliveryID(eventID, endpointID), "", "", 0
		d.Error, d.ErrorMessage, d.FinishedAt = models.DeliveryErrEndpointDisabled, "the endpoint was disabled", at
	}
	if err := s.InsertDelivery(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// recoveryWindow is the window and as-of time of the RecoveryPage tests:
// a day, asked for an hour after it ended.
var (
	rcvSince = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	rcvUntil = rcvSince.Add(24 * time.Hour)
	rcvAsOf  = rcvUntil.Add(time.Hour)
)

// TestRecoveryPageSelection: a recovery finds the events with a row to its
// endpoint started in [Since, Until) (skipped rows included) and no
// succeeded row started before AsOf, each once, in event id order, with the
// last row started before AsOf as the one to replay; rows at or after AsOf
// (the recovery's own replays) change nothing, other endpoints' and other
// tenants' rows are not looked at, and an event whose row is gone is still
// found, without its Event.
func TestRecoveryPageSelection(t *testing.T) {
	const us = time.Microsecond
	in := rcvSince.Add(time.Hour) // inside the window
	type whose int
	const (
		own           whose = iota
		otherEndpoint       // the tenant's other endpoint
		otherTenant         // another tenant's endpoint
		foreignRow          // another tenant's row that names the recovery's endpoint
	)
	type row struct {
		whose whose
		kind  rowKind
		at    time.Time
	}
	type want struct {
		Found    bool
		ReplayOf int // index of the row the replay replays
		NoEvent  bool
	}
	cases := []struct {
		name string
		rows []row
		// otherTenantsEvent: the event belongs to the other tenant.
		otherTenantsEvent bool
		deleteEvent       bool
		want              want
	}{
		{name: "a: one failed row in the window", rows: []row{{own, rowFailed, in}}, want: want{Found: true}},
		{name: "b: failed before the window and in it", rows: []row{{own, rowFailed, rcvSince.Add(-2 * time.Hour)}, {own, rowFailed, in}},
			want: want{Found: true, ReplayOf: 1}},
		{name: "b: failed in the window, again after it before as_of", rows: []row{{own, rowFailed, in}, {own, rowFailed, rcvUntil.Add(10 * time.Minute)}},
			want: want{Found: true, ReplayOf: 1}},
		{name: "b: two rows started together, the larger id is the last", rows: []row{{own, rowFailed, in}, {own, rowFailed, in}},
			want: want{Found: true, ReplayOf: 1}},
		{name: "c: succeeded before the window", rows: []row{{own, rowSucceeded, rcvSince.Add(-time.Hour)}, {own, rowFailed, in}}},
		{name: "c: succeeded later in the window", rows: []row{{own, rowFailed, in}, {own, rowSucceeded, in.Add(time.Hour)}}},
		{name: "c: succeeded after until, before as_of", rows: []row{{own, rowFailed, in}, {own, rowSucceeded, rcvUntil.Add(time.Minute)}}},
		{name: "c: succeeded just before as_of", rows: []row{{own, rowFailed, in}, {own, rowSucceeded, rcvAsOf.Add(-us)}}},
		{name: "d: succeeded at as_of (the recovery's replay)", rows: []row{{own, rowFailed, in}, {own, rowSucceeded, rcvAsOf}},
			want: want{Found: true}},
		{name: "d: replays after as_of, failed then succeeded", rows: []row{{own, rowFailed, in}, {own, rowFailed, rcvAsOf.Add(time.Minute)}, {own, rowSucceeded, rcvAsOf.Add(2 * time.Minute)}},
			want: want{Found: true}},
		{name: "e: skipped in the window", rows: []row{{own, rowSkipped, in}}, want: want{Found: true}},
		{name: "f: just before since", rows: []row{{own, rowFailed, rcvSince.Add(-us)}}},
		{name: "f: at since", rows: []row{{own, rowFailed, rcvSince}}, want: want{Found: true}},
		{name: "f: just before until", rows: []row{{own, rowFailed, rcvUntil.Add(-us)}}, want: want{Found: true}},
		{name: "f: at until", rows: []row{{own, rowFailed, rcvUntil}}},
		{name: "f: before since and after until", rows: []row{{own, rowFailed, rcvSince.Add(-time.Hour)}, {own, rowFailed, rcvUntil}, {own, rowSkipped, rcvUntil.Add(time.Hour)}}},
		{name: "g: another endpoint's row", rows: []row{{otherEndpoint, rowFailed, in}}},
		{name: "g: another tenant's row", rows: []row{{otherTenant, rowFailed, in}}, otherTenantsEvent: true},
		{name: "g: another tenant's row naming the endpoint", rows: []row{{foreignRow, rowFailed, in}}, otherTenantsEvent: true},
		{name: "g: succeeded to another endpoint only", rows: []row{{own, rowFailed, in}, {otherEndpoint, rowSucceeded, in.Add(time.Minute)}},
			want: want{Found: true}},
		{name: "h: event deleted", rows: []row{{own, rowFailed, in}}, deleteEvent: true, want: want{Found: true, NoEvent: true}},
	}
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		f := newRecoveryFixture(t, d)
		caseOf := map[string]string{}   // event id → case name
		rowIDs := map[string][]string{} // case name → its rows' ids
		for _, c := range cases {
			o := f.tenant
			if c.otherTenantsEvent {
				o = f.other
			}
			ev := f.events(t, o, 1)[0]
			caseOf[ev] = c.name
			for _, r := range c.rows {
				tenant, endpoint := f.tenant.id, f.ep.ID
				switch r.whose {
				case otherEndpoint:
					endpoint = f.ep2.ID
				case otherTenant:
					tenant, endpoint = f.other.id, f.otherEP.ID
				case foreignRow:
					tenant = f.other.id
				}
				rowIDs[c.name] = append(rowIDs[c.name], insertRecoveryRow(t, f.s, tenant, ev, endpoint, r.kind, r.at))
			}
			if c.deleteEvent {
				f.deleteEvent(t, ev)
			}
		}

		page, err := f.s.RecoveryPage(t.Context(), models.RecoveryPageQuery{
			TenantID: f.tenant.id, EndpointID: f.ep.ID, Since: rcvSince, Until: rcvUntil, AsOf: rcvAsOf, Limit: 1000,
		})
		if err != nil {
			t.Fatalf("RecoveryPage: %v", err)
		}
		type result struct {
			Found    bool
			Times    int
			ReplayOf string
			NoEvent  bool
		}
		got := map[string]result{}
		for i, c := range page {
			name, ok := caseOf[c.EventID]
			if !ok {
				t.Errorf("candidate %s is no case's event", c.EventID)
				continue
			}
			if i > 0 && page[i-1].EventID >= c.EventID {
				t.Errorf("candidate %d (%s) follows %s: want ascending event ids", i, c.EventID, page[i-1].EventID)
			}
			if c.Event != nil && (c.Event.ID != c.EventID || c.Event.TenantID != f.tenant.id) {
				t.Errorf("%s: candidate %s has event %s of tenant %s", name, c.EventID, c.Event.ID, c.Event.TenantID)
			}
			r := got[name]
			got[name] = result{Found: true, Times: r.Times + 1, ReplayOf: c.ReplayOf, NoEvent: c.Event == nil}
		}
		wantResults := map[string]result{}
		for _, c := range cases {
			if c.want.Found {
				wantResults[c.name] = result{Found: true, Times: 1, ReplayOf: rowIDs[c.name][c.want.ReplayOf], NoEvent: c.want.NoEvent}
			}
		}
		if diff := cmp.Diff(got, wantResults); diff != "" {
			t.Errorf("recovery page by case (-got +want):\n%s", diff)
		}
	})
}

// TestRecoveryPagePaging: 250 failed events come in pages of 100, 100 and
// 50, then none, each event once, in event id order; succeeded rows of
// paged events started after AsOf (the recovery's replays succeeding)
// change neither a page asked for again nor the pages that follow.
func TestRecoveryPagePaging(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		f := newRecoveryFixture(t, d)
		const total, limit = 250, 100
		evs := f.events(t, f.tenant, total)
		failedRow := map[string]string{}
		for i, ev := range evs {
			// Started in the reverse order of the event ids: the order
			// of the page is the ids', not the rows'.
			failedRow[ev] = insertRecoveryRow(t, f.s, f.tenant.id, ev, f.ep.ID, rowFailed, rcvSince.Add(time.Duration(total-i)*time.Minute))
		}
		// Noise that no page shows: a delivered event, another endpoint's rows.
		delivered := f.events(t, f.tenant, 1)[0]
		insertRecoveryRow(t, f.s, f.tenant.id, delivered, f.ep.ID, rowSucceeded, rcvSince.Add(time.Hour))
		insertRecoveryRow(t, f.s, f.tenant.id, evs[0], f.ep2.ID, rowFailed, rcvSince.Add(time.Hour))

		type candidate struct{ EventID, ReplayOf string }
		pageAfter := func(after string) []candidate {
			t.Helper()
			page, err := f.s.RecoveryPage(ctx, models.RecoveryPageQuery{
				TenantID: f.tenant.id, EndpointID: f.ep.ID, Since: rcvSince, Until: rcvUntil, AsOf: rcvAsOf, After: after, Limit: limit,
			})
			if err != nil {
				t.Fatalf("RecoveryPage after %q: %v", after, err)
			}
			out := make([]candidate, len(page))
			for i, c := range page {
				if c.Event == nil {
					t.Errorf("candidate %s without its event", c.EventID)
				}
				out[i] = candidate{c.EventID, c.ReplayOf}
			}
			return out
		}
		// walk pages through the recovery; replay, when set, is called
		// with each page, as the recovery's replays of it are recorded.
		walk := func(replay func(page []candidate)) [][]candidate {
			t.Helper()
			var pages [][]candidate
			after := ""
			for range 10 {
				page := pageAfter(after)
				pages = append(pages, page)
				if len(page) == 0 {
					return pages
				}
				if replay != nil {
					replay(page)
					if diff := cmp.Diff(pageAfter(after), page); diff != "" {
						t.Errorf("page after %q asked for again, after its replays succeeded (-again +first):\n%s", after, diff)
					}
				}
				after = page[len(page)-1].EventID
			}
			t.Fatal("no empty page after 10 pages")
			return nil
		}

		replayed := 0
		pages := walk(func(page []candidate) {
			for _, c := range page {
				replayed++
				insertRecoveryRow(t, f.s, f.tenant.id, c.EventID, f.ep.ID, rowSucceeded, rcvAsOf.Add(time.Duration(replayed)*time.Second))
			}
		})
		var (
			sizes []int
			seen  []string
		)
		for _, p := range pages {
			sizes = append(sizes, len(p))
			for _, c := range p {
				seen = append(seen, c.EventID)
			}
		}
		if diff := cmp.Diff(sizes, []int{100, 100, 50, 0}); diff != "" {
			t.Errorf("page sizes (-got +want):\n%s", diff)
		}
		sorted := slices.Sorted(slices.Values(evs))
		if diff := cmp.Diff(seen, sorted); diff != "" {
			t.Errorf("events across the pages (-got +want, each once in id order):\n%s", diff)
		}
		want := make([]candidate, len(sorted))
		for i, ev := range sorted {
			want[i] = candidate{ev, failedRow[ev]}
		}
		if diff := cmp.Diff(slices.Concat(pages...), want); diff != "" {
			t.Errorf("candidates (-got +want: the failed row of each event to replay):\n%s", diff)
		}

		// Every event has succeeded since (after AsOf): the recovery's
		// pages are still what they were.
		if diff := cmp.Diff(walk(nil), pages); diff != "" {
			t.Errorf("pages walked again after every replay succeeded (-again +first):\n%s", diff)
		}

		if _, err := f.s.RecoveryPage(ctx, models.RecoveryPageQuery{TenantID: f.tenant.id, EndpointID: f.ep.ID,
			Since: rcvSince, Until: rcvUntil, AsOf: rcvAsOf}); err == nil {
			t.Error("RecoveryPage without a limit: no error")
		}
	})
}

// TestReserveRecoveryReplays: a recovery reserves the next replay number of
// each event to its endpoint, numbered with the manual replays of
// Store.NextReplay in both directions; a page reserved again gets the same
// workflow ids and writes nothing; another recovery numbers past both.
func TestReserveRecoveryReplays(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		f := newRecoveryFixture(t, d)
		evs := f.events(t, f.tenant, 4)
		e1, e2, e3, e4 := evs[0], evs[1], evs[2], evs[3]
		wfOf := func(endpointID string) func(eventID string, n int) string {
			return func(eventID string, n int) string {
				return fmt.Sprintf("webhook-replay/%s/%s/%d", eventID, endpointID, n)
			}
		}
		wf := wfOf(f.ep.ID)
		manual := func(eventID, endpointID string) int {
			t.Helper()
			n, id, err := f.s.NextReplay(ctx, eventID, endpointID, func(n int) string { return wfOf(endpointID)(eventID, n) })
			if err != nil {
				t.Fatalf("NextReplay: %v", err)
			}
			if want := wfOf(endpointID)(eventID, n); id != want {
				t.Errorf("NextReplay workflow id %q, want %q", id, want)
			}
			return n
		}
		reserve := func(recoveryID string, eventIDs []string, workflowID func(string, int) string) map[string]string {
			t.Helper()
			got, err := f.s.ReserveRecoveryReplays(ctx, recoveryID, f.ep.ID, eventIDs, workflowID)
			if err != nil {
				t.Fatalf("ReserveRecoveryReplays(%v): %v", eventIDs, err)
			}
			return got
		}
		newRecovery := func() *models.WebhookRecovery {
			t.Helper()
			r, err := f.s.CreateRecovery(ctx, f.ep, rcvSince, rcvUntil, rcvAsOf, func(n int) string { return fmt.Sprintf("webhook-recovery/%s/%d", f.ep.ID, n) })
			if err != nil {
				t.Fatalf("CreateRecovery: %v", err)
			}
			return r
		}

		// Before the recovery: a manual replay of e2 to the endpoint, and
		// one of e1 to another endpoint (numbered apart).
		if n := manual(e2, f.ep.ID); n != 1 {
			t.Fatalf("first manual replay of e2: n = %d", n)
		}
		manual(e1, f.ep2.ID)

		r1 := newRecovery()
		first := reserve(r1.ID, []string{e1, e2, e3}, wf)
		if diff := cmp.Diff(first, map[string]string{e1: wf(e1, 1), e2: wf(e2, 2), e3: wf(e3, 1)}); diff != "" {
			t.Errorf("first reservation (-got +want):\n%s", diff)
		}
		rowsAfterFirst := replayRows(t, f.db)
		wantRows := []replayRow{
			{e1, f.ep.ID, 1, wf(e1, 1), r1.ID}, {e1, f.ep2.ID, 1, wfOf(f.ep2.ID)(e1, 1), ""},
			{e2, f.ep.ID, 1, wf(e2, 1), ""}, {e2, f.ep.ID, 2, wf(e2, 2), r1.ID},
			{e3, f.ep.ID, 1, wf(e3, 1), r1.ID},
		}
		if diff := cmp.Diff(rowsAfterFirst, sortedReplayRows(wantRows)); diff != "" {
			t.Errorf("webhook_replays after the first reservation (-got +want):\n%s", diff)
		}

		// The page again (a retried activity): the same ids, nothing new,
		// and workflowID is not asked for them.
		again := reserve(r1.ID, []string{e1, e2, e3}, func(eventID string, n int) string {
			t.Errorf("workflowID(%s, %d) called for an event the recovery has reserved", eventID, n)
			return "unexpected"
		})
		if diff := cmp.Diff(again, first); diff != "" {
			t.Errorf("reservation of the same page again (-again +first):\n%s", diff)
		}
		if diff := cmp.Diff(replayRows(t, f.db), rowsAfterFirst); diff != "" {
			t.Errorf("webhook_replays after the same page again (-got +before):\n%s", diff)
		}

		// A page that overlaps: the reserved event keeps its id, the new one gets n = 1.
		overlap := reserve(r1.ID, []string{e3, e4}, wf)
		if diff := cmp.Diff(overlap, map[string]string{e3: wf(e3, 1), e4: wf(e4, 1)}); diff != "" {
			t.Errorf("overlapping page (-got +want):\n%s", diff)
		}

		// A manual replay after the recovery's numbers past it; a second
		// recovery numbers past both.
		if n := manual(e1, f.ep.ID); n != 2 {
			t.Errorf("manual replay of e1 after the recovery's: n = %d, want 2", n)
		}
		if err := f.s.FinishRecovery(ctx, r1.ID, models.RecoveryCompleted, models.RecoveryProgress{}, "", rcvAsOf); err != nil {
			t.Fatal(err)
		}
		r2 := newRecovery()
		if r2.N != 2 {
			t.Errorf("second recovery numbered %d, want 2", r2.N)
		}
		second := reserve(r2.ID, []string{e1, e2}, wf)
		if diff := cmp.Diff(second, map[string]string{e1: wf(e1, 3), e2: wf(e2, 3)}); diff != "" {
			t.Errorf("second recovery's reservation (-got +want):\n%s", diff)
		}

		before := replayRows(t, f.db)
		for _, empty := range [][]string{nil, {}} {
			if got := reserve(r2.ID, empty, wf); len(got) != 0 {
				t.Errorf("reservation of %#v: %v, want an empty map", empty, got)
			}
		}
		wantRows = append(wantRows,
			replayRow{e4, f.ep.ID, 1, wf(e4, 1), r1.ID}, replayRow{e1, f.ep.ID, 2, wf(e1, 2), ""},
			replayRow{e1, f.ep.ID, 3, wf(e1, 3), r2.ID}, replayRow{e2, f.ep.ID, 3, wf(e2, 3), r2.ID})
		if diff := cmp.Diff(before, sortedReplayRows(wantRows)); diff != "" {
			t.Errorf("webhook_replays at the end (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(replayRows(t, f.db), before); diff != "" {
			t.Errorf("webhook_replays after empty reservations (-got +before):\n%s", diff)
		}
	})
}

// cmpOrder is the first non-zero comparison.
func cmpOrder(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

// recoveryView is what GetRecovery says of a recovery, times in UTC.
type recoveryView struct {
	N                       int
	WorkflowID, Status      string
	Since, Until, StartedAt time.Time
	Found, Replayed, Failed int
	Error                   string
	FinishedAt              *time.Time
}

func viewRecovery(r *models.WebhookRecovery) recoveryView {
	v := recoveryView{
		N: r.N, WorkflowID: r.WorkflowID, Status: r.Status,
		Since: r.WindowSince.UTC(), Until: r.WindowUntil.UTC(), StartedAt: r.StartedAt.UTC(),
		Found: r.Found, Replayed: r.Replayed, Failed: r.Failed, Error: r.Error,
	}
	if r.FinishedAt != nil {
		v.FinishedAt = ptr(r.FinishedAt.UTC())
	}
	return v
}

// TestRecoveryLifecycle: recoveries are numbered per endpoint, read only
// by their tenant through their endpoint, take absolute progress while
// running, end once as completed or failed, and refuse other end states.
func TestRecoveryLifecycle(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		f := newRecoveryFixture(t, d)
		// A window given in another zone is stored in UTC.
		cet := time.FixedZone("CET", 3600)
		since, until := time.Date(2025, 3, 1, 1, 0, 0, 0, cet), time.Date(2025, 3, 2, 1, 0, 0, 0, cet)
		wfOf := func(ep *models.WebhookEndpoint) func(int) string {
			return func(n int) string { return fmt.Sprintf("webhook-recovery/%s/%d", ep.ID, n) }
		}
		create := func(ep *models.WebhookEndpoint) *models.WebhookRecovery {
			t.Helper()
			r, err := f.s.CreateRecovery(ctx, ep, since, until, f.clock.Now().Truncate(time.Microsecond), wfOf(ep))
			if err != nil {
				t.Fatalf("CreateRecovery: %v", err)
			}
			return r
		}
		get := func(tenantID, endpointID, id string) recoveryView {
			t.Helper()
			r, err := f.s.GetRecovery(ctx, tenantID, endpointID, id)
			if err != nil {
				t.Fatalf("GetRecovery %s: %v", id, err)
			}
			return viewRecovery(r)
		}
		started := f.clock.Now().UTC().Truncate(time.Microsecond)
		running := func(ep *models.WebhookEndpoint, n int) recoveryView {
			return recoveryView{N: n, WorkflowID: wfOf(ep)(n), Status: models.RecoveryRunning,
				Since: since.UTC(), Until: until.UTC(), StartedAt: started}
		}

		a1, b1 := create(f.ep), create(f.ep2)
		for _, c := range []struct {
			name string
			r    *models.WebhookRecovery
			ep   *models.WebhookEndpoint
			want recoveryView
		}{
			{"endpoint A, first", a1, f.ep, running(f.ep, 1)},
			{"endpoint B, first", b1, f.ep2, running(f.ep2, 1)},
		} {
			if !strings.HasPrefix(c.r.ID, models.PrefixRecovery) {
				t.Errorf("%s: id %q", c.name, c.r.ID)
			}
			if diff := cmp.Diff(viewRecovery(c.r), c.want); diff != "" {
				t.Errorf("%s as created (-got +want):\n%s", c.name, diff)
			}
			if diff := cmp.Diff(get(f.tenant.id, c.ep.ID, c.r.ID), c.want); diff != "" {
				t.Errorf("%s as stored (-got +want):\n%s", c.name, diff)
			}
		}

		// While a1 runs, endpoint A takes no other recovery: the refusal
		// names a1 and uses up no number.
		_, err := f.s.CreateRecovery(ctx, f.ep, since, until, f.clock.Now(), wfOf(f.ep))
		if running, ok := errors.AsType[*models.RecoveryRunningError](err); !ok || running.Running.ID != a1.ID || models.ErrorKind(err) != models.KindConflict {
			t.Errorf("second recovery of A while a1 runs: %v, want a conflict naming %s", err, a1.ID)
		}

		for _, c := range []struct{ name, tenant, endpoint, id string }{
			{"another tenant", f.other.id, f.ep.ID, a1.ID},
			{"another tenant's endpoint", f.other.id, f.otherEP.ID, a1.ID},
			{"another endpoint", f.tenant.id, f.ep2.ID, a1.ID},
			{"another endpoint's recovery", f.tenant.id, f.ep.ID, b1.ID},
			{"unknown id", f.tenant.id, f.ep.ID, "rcv_missing"},
		} {
			if _, err := f.s.GetRecovery(ctx, c.tenant, c.endpoint, c.id); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("GetRecovery, %s: %v, want ErrNotFound", c.name, err)
			}
		}

		// Progress is absolute: the second write replaces the first.
		for _, p := range []models.RecoveryProgress{{Found: 3, Replayed: 2, Failed: 1}, {Found: 4, Replayed: 3, Failed: 1}} {
			if err := f.s.SetRecoveryProgress(ctx, a1.ID, p); err != nil {
				t.Fatalf("SetRecoveryProgress: %v", err)
			}
		}
		want := running(f.ep, 1)
		want.Found, want.Replayed, want.Failed = 4, 3, 1
		if diff := cmp.Diff(get(f.tenant.id, f.ep.ID, a1.ID), want); diff != "" {
			t.Errorf("after progress (-got +want):\n%s", diff)
		}

		at := started.Add(time.Minute).In(cet)
		if err := f.s.FinishRecovery(ctx, a1.ID, models.RecoveryCompleted, models.RecoveryProgress{Found: 5, Replayed: 4, Failed: 1}, "", at); err != nil {
			t.Fatalf("FinishRecovery: %v", err)
		}
		done := running(f.ep, 1)
		done.Status, done.Found, done.Replayed, done.Failed, done.FinishedAt = models.RecoveryCompleted, 5, 4, 1, ptr(at.UTC())
		if diff := cmp.Diff(get(f.tenant.id, f.ep.ID, a1.ID), done); diff != "" {
			t.Errorf("after finishing (-got +want):\n%s", diff)
		}

		// Endpoint A's second recovery, once the first ended, takes the
		// next number.
		a2 := create(f.ep)

		// Finished: progress and a second end change nothing.
		if err := f.s.SetRecoveryProgress(ctx, a1.ID, models.RecoveryProgress{Found: 9, Replayed: 9, Failed: 9}); err != nil {
			t.Errorf("SetRecoveryProgress after the end: %v", err)
		}
		if err := f.s.FinishRecovery(ctx, a1.ID, models.RecoveryFailed, models.RecoveryProgress{Found: 7, Replayed: 7, Failed: 7}, "too late", at.Add(time.Hour)); err != nil {
			t.Errorf("FinishRecovery again: %v", err)
		}
		if diff := cmp.Diff(get(f.tenant.id, f.ep.ID, a1.ID), done); diff != "" {
			t.Errorf("after progress and a second end (-got +want: the first end):\n%s", diff)
		}

		for _, status := range []string{models.RecoveryRunning, "", "done", "COMPLETED"} {
			if err := f.s.FinishRecovery(ctx, a2.ID, status, models.RecoveryProgress{Found: 1}, "", at); err == nil {
				t.Errorf("FinishRecovery with status %q: no error", status)
			}
		}
		if diff := cmp.Diff(get(f.tenant.id, f.ep.ID, a2.ID), running(f.ep, 2)); diff != "" {
			t.Errorf("after bad ends (-got +want: unchanged):\n%s", diff)
		}

		if err := f.s.FinishRecovery(ctx, a2.ID, models.RecoveryFailed, models.RecoveryProgress{Found: 2, Failed: 2}, "the endpoint was disabled", at); err != nil {
			t.Fatalf("FinishRecovery failed: %v", err)
		}
		failed := running(f.ep, 2)
		failed.Status, failed.Found, failed.Failed, failed.Error, failed.FinishedAt = models.RecoveryFailed, 2, 2, "the endpoint was disabled", ptr(at.UTC())
		if diff := cmp.Diff(get(f.tenant.id, f.ep.ID, a2.ID), failed); diff != "" {
			t.Errorf("failed recovery (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(get(f.tenant.id, f.ep2.ID, b1.ID), running(f.ep2, 1)); diff != "" {
			t.Errorf("endpoint B's recovery after A's ended (-got +want: unchanged):\n%s", diff)
		}
	})
}
