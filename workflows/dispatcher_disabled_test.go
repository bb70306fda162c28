package workflows

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// setEnabled switches one of the fixture's endpoints on or off by PATCH.
func (f *fixture) setEnabled(t *testing.T, id string, on bool) {
	t.Helper()
	if _, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, id, models.EndpointInput{Enabled: &on}, allowURL); err != nil {
		t.Fatal(err)
	}
}

// deliveries returns the rows of the fixture's tenant, newest first.
func (f *fixture) deliveries(t *testing.T, q models.DeliveryQuery) []models.WebhookDelivery {
	t.Helper()
	q.Page = models.Page{Page: 1, Limit: 100}
	rows, _, err := f.store.ListDeliveries(t.Context(), f.tenantID, q)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestDispatcherSkipsDisabled: a disabled endpoint that wants the event
// gets no workflow but one skipped row, written at the first dispatch and
// kept when the event is handled again; an enabled one gets its start; a
// disabled one that does not want the event gets nothing.
func TestDispatcherSkipsDisabled(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			clock := storetest.NewClock()
			f := newFixtureOn(t, storetest.NewDB(t, d).Open(t, models.Options{Now: clock.Now}))
			off := f.endpoint(t, 3, models.EventRecordCreated)
			f.setEnabled(t, off.ID, false)
			f.setEnabled(t, f.other.ID, false) // wants deletions only
			ev := f.record(t)
			starter := newFakeStarter()
			disp := newDispatcher(f, starter)

			// The first round starts nothing (Temporal refuses) but records
			// the skipped row; the event stays pending and is handled again.
			starter.setFail(func(string) error { return errUnavailable })
			if _, err := disp.DispatchOnce(t.Context()); err == nil {
				t.Fatal("the round succeeded without Temporal")
			}
			dispatchedAt := clock.Now().UTC().Truncate(time.Microsecond)
			clock.Advance(time.Minute)
			starter.setFail(nil)
			if _, err := disp.DispatchOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			if p := f.pending(t); len(p) != 0 {
				t.Errorf("%d events still pending", len(p))
			}
			var started []string
			for _, s := range starter.starts() {
				started = append(started, s.opts.ID)
			}
			if diff := cmp.Diff([]string{WorkflowID(ev.ID, f.subscribed.ID)}, started); diff != "" {
				t.Errorf("started (-want +got):\n%s", diff)
			}

			rows := f.deliveries(t, models.DeliveryQuery{EventID: ev.ID})
			if len(rows) != 1 {
				t.Fatalf("%d rows for the event, want the skipped one: %+v", len(rows), rows)
			}
			got := rows[0]
			got.StartedAt, got.FinishedAt = got.StartedAt.UTC(), got.FinishedAt.UTC()
			want := models.WebhookDelivery{
				ID: models.SkippedDeliveryID(ev.ID, off.ID), TenantID: f.tenantID, EventID: ev.ID, EventType: models.EventRecordCreated, RecordID: ev.RecordID,
				EndpointID: off.ID, RequestURL: off.URL, RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{},
				Error: models.DeliveryErrEndpointDisabled, ErrorMessage: got.ErrorMessage,
				StartedAt: dispatchedAt, FinishedAt: dispatchedAt,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("skipped row (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDispatcherEndpointDisabledEvent: an endpoint_disabled event goes to
// the endpoints that subscribe to it, whatever their module filter, never
// to the endpoint it is about (not even after that one was enabled again,
// and without a skipped row), and is recorded as skipped for disabled
// subscribers.
func TestDispatcherEndpointDisabledEvent(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			f := newFixture(t, d)
			u, events, modules := "https://watcher.example/hook", []string{models.EventEndpointDisabled}, []string{f.module.ID}
			watcher, _, err := f.store.CreateEndpoint(ctx, f.tenantID, models.EndpointInput{URL: &u, Events: &events, ModuleIDs: &modules}, allowURL)
			if err != nil {
				t.Fatal(err)
			}
			subject := f.endpoint(t, 5, models.EventEndpointDisabled, models.EventRecordCreated)
			late := f.endpoint(t, 5, models.EventEndpointDisabled)

			// Announces late: to watcher and subject.
			f.setEnabled(t, late.ID, false)
			// Announces subject: to watcher, and skipped for late.
			if err := f.store.DisableEndpoint(ctx, f.tenantID, subject.ID); err != nil {
				t.Fatal(err)
			}
			f.setEnabled(t, subject.ID, true)
			about := map[string]string{} // endpoint → its event
			for _, ev := range f.pending(t) {
				id, err := ev.DisabledEndpointID()
				if err != nil || ev.Type != models.EventEndpointDisabled {
					t.Fatalf("pending %+v: %v", ev, err)
				}
				about[id] = ev.ID
			}
			if len(about) != 2 || about[late.ID] == "" || about[subject.ID] == "" {
				t.Fatalf("pending endpoint_disabled events by endpoint %v, want one about each", about)
			}

			starter := newFakeStarter()
			if n, err := newDispatcher(f, starter).DispatchOnce(ctx); err != nil || n != 2 {
				t.Fatalf("%d marked, %v; want 2, nil", n, err)
			}
			var started []string
			for _, s := range starter.starts() {
				started = append(started, s.opts.ID)
				if s.opts.ID != WorkflowID(about[subject.ID], watcher.ID) {
					continue
				}
				wantIn := DeliveryInput{
					TenantID: f.tenantID, EventID: about[subject.ID], EventType: models.EventEndpointDisabled, EndpointID: watcher.ID,
					RetryMax: models.DefaultRetryMax, Policy: testPolicy,
				}
				if diff := cmp.Diff(wantIn, s.in); diff != "" {
					t.Errorf("input (-want +got):\n%s", diff)
				}
				for _, k := range []temporal.SearchAttributeKeyKeyword{ModuleAttr, RecordAttr} {
					if v, ok := s.opts.TypedSearchAttributes.GetKeyword(k); ok {
						t.Errorf("search attribute %s = %q on an event without one", k.GetName(), v)
					}
				}
			}
			want := []string{
				WorkflowID(about[late.ID], watcher.ID), WorkflowID(about[late.ID], subject.ID),
				WorkflowID(about[subject.ID], watcher.ID),
			}
			if diff := cmp.Diff(want, started, cmpSorted); diff != "" {
				t.Errorf("started (-want +got):\n%s", diff)
			}
			var skipped []string
			for _, r := range f.deliveries(t, models.DeliveryQuery{}) {
				skipped = append(skipped, r.EventID+" "+r.EndpointID+" "+r.Error)
			}
			if diff := cmp.Diff([]string{about[subject.ID] + " " + late.ID + " " + models.DeliveryErrEndpointDisabled}, skipped); diff != "" {
				t.Errorf("delivery rows (-want +got):\n%s", diff)
			}
		})
	}
}
