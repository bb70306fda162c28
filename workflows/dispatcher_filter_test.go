package workflows

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// ordersModule adds a module with a title and a status to the fixture's
// tenant.
func (f *fixture) ordersModule(t *testing.T) *models.Module {
	t.Helper()
	slug, name := "orders", "Orders"
	fields := []models.Field{
		{Name: "title", Type: models.TypeString},
		{Name: "status", Type: models.TypeStatus, States: []string{"new", "paid", "shipped"}, Initial: "new"},
	}
	m, err := f.store.CreateModule(t.Context(), f.tenantID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// filteredEndpoint creates an endpoint on module m with a filter.
func (f *fixture) filteredEndpoint(t *testing.T, m *models.Module, filter map[string]any, events ...string) *models.WebhookEndpoint {
	t.Helper()
	u, modules := "https://receiver.example/filtered", []string{m.ID}
	ep, _, err := f.store.CreateEndpoint(t.Context(), f.tenantID, models.EndpointInput{URL: &u, Events: &events, ModuleIDs: &modules, Filter: &filter}, allowURL)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// TestDispatcherFilters: an endpoint's filter is checked against the
// record an event carries (after the change; before it, for a deletion)
// when the event is dispatched. An event that fails it starts no
// workflow and leaves no row, not even a skipped one for a disabled
// endpoint; the event is still marked dispatched. A status_change filter
// names the status the record moved to; operators (in, prefix, ne) hold
// as in the records list. Endpoints without a filter get everything they
// subscribe to.
func TestDispatcherFilters(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			f := newFixture(t, d)
			m := f.ordersModule(t)
			shipped := f.filteredEndpoint(t, m, map[string]any{"status": "shipped"}, models.EventStatusChange)
			// Operators: moved on from new, on a record whose title starts "ke".
			movedOn := f.filteredEndpoint(t, m, map[string]any{
				"status": map[string]any{"in": []any{"paid", "shipped"}},
				"title":  map[string]any{"prefix": "ke", "ne": "kept"},
			}, models.EventStatusChange)
			deletedKeep := f.filteredEndpoint(t, m, map[string]any{"title": "keep"}, models.EventRecordDeleted)
			offKeep := f.filteredEndpoint(t, m, map[string]any{"title": "keep"}, models.EventRecordCreated)
			f.setEnabled(t, offKeep.ID, false)

			keep, err := f.store.CreateRecord(ctx, m, map[string]any{"title": "keep"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			drop, err := f.store.CreateRecord(ctx, m, map[string]any{"title": "drop"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range []string{"paid", "shipped"} {
				if _, _, err := f.store.UpdateRecord(ctx, m, keep.ID, models.RecordPatch{Fields: map[string]any{"status": st}}, nil); err != nil {
					t.Fatal(err)
				}
			}
			// The deletion's body carries the record before it: title keep.
			for _, r := range []*models.Record{keep, drop} {
				if _, err := f.store.DeleteRecord(ctx, m, r.ID); err != nil {
					t.Fatal(err)
				}
			}

			evs := f.pending(t)
			find := func(typ, recordID string, extra func(*models.Event) bool) string {
				t.Helper()
				for _, ev := range evs {
					if ev.Type == typ && ev.RecordID == recordID && (extra == nil || extra(&ev)) {
						return ev.ID
					}
				}
				t.Fatalf("no %s event of %s", typ, recordID)
				return ""
			}
			toShipped := find(models.EventStatusChange, keep.ID, func(ev *models.Event) bool {
				return strings.Contains(ev.Payload, `"to":"shipped"`)
			})
			starter := newFakeStarter()
			disp := newDispatcher(f, starter)
			for {
				n, err := disp.DispatchOnce(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			var got []string
			for _, s := range starter.starts() {
				got = append(got, s.opts.ID)
			}
			toPaid := find(models.EventStatusChange, keep.ID, func(ev *models.Event) bool {
				return strings.Contains(ev.Payload, `"to":"paid"`)
			})
			want := []string{
				WorkflowID(toShipped, shipped.ID),
				WorkflowID(toPaid, movedOn.ID),
				WorkflowID(toShipped, movedOn.ID),
				WorkflowID(find(models.EventRecordDeleted, keep.ID, nil), deletedKeep.ID),
				// The endpoints without a filter, on every module.
				WorkflowID(find(models.EventRecordCreated, keep.ID, nil), f.subscribed.ID),
				WorkflowID(find(models.EventRecordCreated, drop.ID, nil), f.subscribed.ID),
				WorkflowID(find(models.EventRecordDeleted, keep.ID, nil), f.other.ID),
				WorkflowID(find(models.EventRecordDeleted, drop.ID, nil), f.other.ID),
			}
			if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
				t.Errorf("started workflows (-want +got):\n%s", diff)
			}
			if p := f.pending(t); len(p) != 0 {
				t.Errorf("%d events still pending", len(p))
			}

			// The disabled endpoint: a skipped row for the matching creation only.
			rows, _, err := f.store.ListDeliveries(ctx, f.tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 100}, EndpointID: offKeep.ID})
			if err != nil {
				t.Fatal(err)
			}
			var skipped []string
			for _, r := range rows {
				skipped = append(skipped, r.EventID)
			}
			if diff := cmp.Diff([]string{find(models.EventRecordCreated, keep.ID, nil)}, skipped); diff != "" {
				t.Errorf("skipped rows of the disabled endpoint (-want +got):\n%s", diff)
			}
			for _, ep := range []*models.WebhookEndpoint{shipped, deletedKeep} {
				if rows, _, err := f.store.ListDeliveries(ctx, f.tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 100}, EndpointID: ep.ID}); err != nil || len(rows) != 0 {
					t.Errorf("endpoint %s: %d rows (%v), want none before any attempt", ep.ID, len(rows), err)
				}
			}
		})
	}
}
