package models_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestRecordEvents: every record change writes its events in the outbox,
// exactly the documented ones, and a change that changes nothing none.
func TestRecordEvents(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.Open(t, d)
			tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
			if err != nil {
				t.Fatal(err)
			}
			fields := []models.Field{
				{Name: "title", Type: models.TypeString},
				{Name: "stage", Type: models.TypeStatus, States: []string{"a", "b", "c"}, Initial: "a"},
				{Name: "phase", Type: models.TypeStatus, States: []string{"x", "y"}, Initial: "x"},
			}
			slug, name := "things", "Things"
			m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
			if err != nil {
				t.Fatal(err)
			}
			pending := func() []string {
				t.Helper()
				evs, err := s.PendingEvents(ctx, 100)
				if err != nil {
					t.Fatal(err)
				}
				var types []string
				var ids []string
				for _, e := range evs {
					types = append(types, e.Type)
					ids = append(ids, e.ID)
					var body map[string]any
					if err := json.Unmarshal([]byte(e.Payload), &body); err != nil {
						t.Fatalf("payload %s: %v", e.Payload, err)
					}
					if body["id"] != e.ID || body["event"] != e.Type || body["tenant_id"] != tenant.ID ||
						body["module"].(map[string]any)["slug"] != "things" || body["record"].(map[string]any)["id"] != e.RecordID {
						t.Errorf("payload %s does not match its event %+v", e.Payload, e)
					}
					if e.Type == models.EventStatusChange && body["status"] == nil {
						t.Errorf("status_change without status: %s", e.Payload)
					}
				}
				if err := s.MarkDispatched(ctx, ids); err != nil {
					t.Fatal(err)
				}
				return types
			}

			r, err := s.CreateRecord(ctx, m, map[string]any{"title": "one"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"record_created"}, pending()); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			for _, c := range []struct {
				name  string
				patch models.RecordPatch
				want  []string
			}{
				{"nothing changes", models.RecordPatch{Fields: map[string]any{"title": "one"}}, nil},
				{"a field", models.RecordPatch{Fields: map[string]any{"title": "two"}}, []string{"record_updated"}},
				{"two status fields", models.RecordPatch{Fields: map[string]any{"stage": "b", "phase": "y"}}, []string{"record_updated", "status_change", "status_change"}},
				{"custom data", models.RecordPatch{CustomData: map[string]any{"k": "v"}}, []string{"custom_data_updated"}},
				{"both", models.RecordPatch{Fields: map[string]any{"title": "three"}, CustomData: map[string]any{"k": nil}}, []string{"record_updated", "custom_data_updated"}},
			} {
				if _, _, err := s.UpdateRecord(ctx, m, r.ID, c.patch, nil); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				got := pending()
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.name, diff)
				}
			}
			if _, err := s.DeleteRecord(ctx, m, r.ID); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"record_deleted"}, pending()); diff != "" {
				t.Errorf("delete (-want +got):\n%s", diff)
			}
			// A refused write leaves no event.
			if _, err := s.CreateRecord(ctx, m, map[string]any{"title": 5}, nil); err == nil {
				t.Fatal("invalid record created")
			}
			if got := pending(); len(got) != 0 {
				t.Errorf("events of a refused write: %v", got)
			}
		})
	}
}

// TestRecordEventBodies: the body of each record event type has exactly
// the keys the README and openapi give it: status on status_change only
// (absent, not null, elsewhere); a status_change's changes hold its one
// status field, while the record_updated of the same PATCH holds every
// field that changed.
func TestRecordEventBodies(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, models.SQLite)
	tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	fields := []models.Field{
		{Name: "title", Type: models.TypeString},
		{Name: "stage", Type: models.TypeStatus, States: []string{"a", "b"}, Initial: "a"},
	}
	slug, name := "things", "Things"
	m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRecord(ctx, m, map[string]any{"title": "one"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	patch := models.RecordPatch{Fields: map[string]any{"title": "two", "stage": "b"}, CustomData: map[string]any{"k": "v"}}
	if _, _, err := s.UpdateRecord(ctx, m, r.ID, patch, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteRecord(ctx, m, r.ID); err != nil {
		t.Fatal(err)
	}
	evs, err := s.PendingEvents(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}

	common := []string{"changes", "event", "id", "module", "occurred_at", "record", "tenant_id"}
	type want struct {
		keys    []string
		changes map[string]any
		status  any
	}
	wants := map[string]want{
		models.EventRecordCreated: {common, map[string]any{}, nil},
		models.EventRecordUpdated: {common, map[string]any{"fields": map[string]any{
			"title": map[string]any{"from": "one", "to": "two"},
			"stage": map[string]any{"from": "a", "to": "b"},
		}}, nil},
		models.EventStatusChange: {[]string{"changes", "event", "id", "module", "occurred_at", "record", "status", "tenant_id"}, map[string]any{"fields": map[string]any{
			"stage": map[string]any{"from": "a", "to": "b"},
		}}, map[string]any{"field": "stage", "from": "a", "to": "b"}},
		models.EventCustomDataUpdated: {common, map[string]any{"custom_data": map[string]any{"from": map[string]any{}, "to": map[string]any{"k": "v"}}}, nil},
		models.EventRecordDeleted:     {common, map[string]any{}, nil},
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
		w, ok := wants[e.Type]
		if !ok {
			t.Errorf("unexpected %s event: %s", e.Type, e.Payload)
			continue
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(e.Payload), &body); err != nil {
			t.Fatalf("payload %s: %v", e.Payload, err)
		}
		keys := slices.Sorted(maps.Keys(body))
		if diff := cmp.Diff(keys, w.keys); diff != "" {
			t.Errorf("%s keys (-got +want):\n%s\nbody: %s", e.Type, diff, e.Payload)
		}
		if diff := cmp.Diff(body["changes"], any(w.changes)); diff != "" {
			t.Errorf("%s changes (-got +want):\n%s", e.Type, diff)
		}
		if diff := cmp.Diff(body["status"], w.status); diff != "" {
			t.Errorf("%s status (-got +want):\n%s", e.Type, diff)
		}
	}
	wantTypes := []string{"record_created", "record_updated", "status_change", "custom_data_updated", "record_deleted"}
	if diff := cmp.Diff(types, wantTypes); diff != "" {
		t.Errorf("events (-got +want):\n%s", diff)
	}
}

// TestDispatchEndpointsAndProgress: the dispatcher's read of a round's
// tenants' endpoints has what chooses and starts deliveries, by tenant and
// id, and none of the secrets; an event released with its progress is
// claimed again with it.
func TestDispatchEndpointsAndProgress(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := storetest.Open(t, d)
			var tenants []string
			var want []string
			for _, name := range []string{"a", "b", "c"} {
				tenant, _, _, err := s.CreateTenant(ctx, name, 100)
				if err != nil {
					t.Fatal(err)
				}
				tenants = append(tenants, tenant.ID)
				for range 2 {
					u, events, filter := "https://hooks.example.com/"+name, []string{models.EventRecordCreated}, map[string]any{}
					headers := map[string]string{"Authorization": "Bearer x"}
					ep, _, err := s.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{URL: &u, Events: &events, Filter: &filter, Headers: &headers},
						func(context.Context, string) error { return nil })
					if err != nil {
						t.Fatal(err)
					}
					if name != "c" {
						want = append(want, ep.TenantID+" "+ep.ID)
					}
				}
			}
			eps, err := s.DispatchEndpoints(ctx, tenants[:2])
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ep := range eps {
				got = append(got, ep.TenantID+" "+ep.ID)
				if ep.Secret != "" || ep.Headers != "" || ep.URL == "" || len(ep.Events) != 1 || !ep.Enabled || ep.RetryMax != models.DefaultRetryMax {
					t.Errorf("endpoint %s read as %+v: want what dispatching needs, no secret or headers", ep.ID, ep)
				}
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}

			slug, name := "things", "Things"
			m, err := s.CreateModule(ctx, tenants[0], models.ModuleInput{Slug: &slug, Name: &name, Fields: &[]models.Field{}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreateRecord(ctx, m, map[string]any{}, nil); err != nil {
				t.Fatal(err)
			}
			claim := models.Claim{Owner: "dsp_1", Limit: 10, Lease: time.Minute}
			evs, err := s.ClaimEvents(ctx, claim)
			if err != nil || len(evs) != 1 || evs[0].FanoutAfter != "" {
				t.Fatalf("claimed %+v, %v: want one event, none started", evs, err)
			}
			if err := s.ReleaseEventAfter(ctx, "dsp_1", evs[0].ID, eps[0].ID); err != nil {
				t.Fatal(err)
			}
			again, err := s.ClaimEvents(ctx, claim)
			if err != nil || len(again) != 1 || again[0].FanoutAfter != eps[0].ID {
				t.Fatalf("claimed again %+v, %v: want the event, started up to %s", again, err, eps[0].ID)
			}
		})
	}
}
