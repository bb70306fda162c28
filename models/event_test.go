package models_test

import (
	"context"
	"encoding/json"
	"testing"

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
			tenant, _, _, err := s.CreateTenant(ctx, "t", "", 100)
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
