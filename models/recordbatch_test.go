package models_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestCreateRecords: records created together are stored in order, each
// with its event, and counted; one that fails validation fails them all,
// named by its index, and nothing is written.
func TestCreateRecords(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		tenantID, _ := newTenant(t, s)
		m := thingsModule(t, s, tenantID)
		// stored is what the store holds: the records, oldest first, and
		// the events, each as "<type> <record id>", and the records'
		// count.
		stored := func() (records, events []string, total int64) {
			t.Helper()
			recs, total, err := s.ListRecords(ctx, m, models.RecordQuery{Page: models.Page{Page: 1, Limit: 100}, Sort: "created_at"})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				records = append(records, r.ID)
			}
			evs, err := s.PendingEvents(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				events = append(events, e.Type+" "+e.RecordID)
			}
			return records, events, total
		}

		_, err := s.CreateRecords(ctx, m, []models.RecordValues{{Fields: map[string]any{"n": 1}}, {Fields: map[string]any{"n": "two"}}, {Fields: map[string]any{}}})
		item, ok := errors.AsType[*models.ItemError](err)
		if !ok || item.Index != 1 || models.ErrorKind(err) != models.KindValidation {
			t.Fatalf("CreateRecords with a bad second record = %v, want a validation error naming item 1", err)
		}
		if recs, evs, total := stored(); len(recs) != 0 || len(evs) != 0 || total != 0 {
			t.Fatalf("a refused CreateRecords stored records %v, events %v, a count of %d; want none", recs, evs, total)
		}

		created, err := s.CreateRecords(ctx, m, []models.RecordValues{
			{Fields: map[string]any{"n": 1}}, {Fields: map[string]any{"n": 2}, CustomData: map[string]any{"k": "v"}}, {Fields: map[string]any{"n": 3}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var wantRecords, wantEvents []string
		for i, r := range created {
			if r.Fields["n"] != i+1 || r.Version != 1 {
				t.Errorf("record %d: %+v, want n %d at version 1", i, r, i+1)
			}
			wantRecords = append(wantRecords, r.ID)
			wantEvents = append(wantEvents, models.EventRecordCreated+" "+r.ID)
		}
		records, events, total := stored()
		if diff := cmp.Diff([]any{wantRecords, wantEvents, int64(3)}, []any{records, events, total}); diff != "" {
			t.Errorf("stored records, events and count (-want +got):\n%s", diff)
		}
	})
}
