package models_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestGetEventAndEndpoint: the event and the endpoint read in one statement
// are exactly what GetEvent and GetEndpoint read (every column, a filter,
// headers, a previous secret and health included); a missing event is
// told apart from a missing endpoint; another tenant's event or endpoint
// is not found.
func TestGetEventAndEndpoint(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := storetest.Open(t, d)
			type tenantRows struct {
				id    string
				event models.Event
				ep    *models.WebhookEndpoint
			}
			setup := func(name string) tenantRows {
				tenant, _, _, err := s.CreateTenant(ctx, name, 100)
				if err != nil {
					t.Fatal(err)
				}
				slug, title := "things", "Things"
				fields := []models.Field{{Name: "title", Type: models.TypeString}}
				m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &title, Fields: &fields})
				if err != nil {
					t.Fatal(err)
				}
				u, events, ordering := "https://hooks.example.com/"+name, []string{models.EventRecordCreated}, models.OrderingRecord
				ep, _, err := s.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{
					URL: &u, Events: &events, ModuleIDs: &[]string{m.ID}, Ordering: &ordering,
					Headers: &map[string]string{"Authorization": "Bearer " + name},
					Filter:  &map[string]any{"title": "one"},
				}, allowURL)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := s.RotateEndpointSecret(ctx, tenant.ID, ep.ID, 3600); err != nil {
					t.Fatal(err)
				}
				if err := s.RecordDeliveryEnd(ctx, tenant.ID, ep.ID, false, time.Now(), 0); err != nil {
					t.Fatal(err)
				}
				if _, err := s.CreateRecord(ctx, m, map[string]any{"title": "one"}, map[string]any{"note": "héllo"}); err != nil {
					t.Fatal(err)
				}
				evs, err := s.PendingEvents(ctx, 100)
				if err != nil {
					t.Fatal(err)
				}
				var ev models.Event
				for _, e := range evs {
					if e.TenantID == tenant.ID {
						ev = e
					}
				}
				if ev.ID == "" {
					t.Fatalf("tenant %s has no event", name)
				}
				return tenantRows{id: tenant.ID, event: ev, ep: ep}
			}
			a, b := setup("a"), setup("b")

			ev, ep, err := s.GetEventAndEndpoint(ctx, a.id, a.event.ID, a.ep.ID)
			if err != nil {
				t.Fatalf("GetEventAndEndpoint: %v", err)
			}
			wantEv, err := s.GetEvent(ctx, a.id, a.event.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantEp, err := s.GetEndpoint(ctx, a.id, a.ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			if wantEp.PreviousSecret == nil || wantEp.FirstFailureAt == nil || len(wantEp.Filter) == 0 || wantEp.Headers == "" {
				t.Fatalf("the endpoint lacks the columns the test compares: %+v", wantEp)
			}
			if diff := cmp.Diff(wantEv, ev); diff != "" {
				t.Errorf("event (-GetEvent +GetEventAndEndpoint):\n%s", diff)
			}
			if diff := cmp.Diff(wantEp, ep); diff != "" {
				t.Errorf("endpoint (-GetEndpoint +GetEventAndEndpoint):\n%s", diff)
			}

			for _, c := range []struct {
				name                        string
				tenant, eventID, endpointID string
				eventFound                  bool
			}{
				{"no such event", a.id, "evt_missing", a.ep.ID, false},
				{"no such endpoint", a.id, a.event.ID, "whe_missing", true},
				{"neither", a.id, "evt_missing", "whe_missing", false},
				{"another tenant's endpoint", a.id, a.event.ID, b.ep.ID, true},
				{"another tenant's event", a.id, b.event.ID, a.ep.ID, false},
				{"another tenant's both", a.id, b.event.ID, b.ep.ID, false},
			} {
				ev, ep, err := s.GetEventAndEndpoint(ctx, c.tenant, c.eventID, c.endpointID)
				if !errors.Is(err, models.ErrNotFound) {
					t.Errorf("%s: error %v, want not found", c.name, err)
				}
				if ep != nil {
					t.Errorf("%s: endpoint %s returned", c.name, ep.ID)
				}
				switch {
				case c.eventFound && (ev == nil || ev.ID != c.eventID):
					t.Errorf("%s: event %+v, want %s: the endpoint alone is missing", c.name, ev, c.eventID)
				case !c.eventFound && ev != nil:
					t.Errorf("%s: event %s returned, want none", c.name, ev.ID)
				}
			}
		})
	}
}
