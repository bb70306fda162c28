package models_test

import (
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pressly/goose/v3"

	"github.com/recordhub/recordhub/migrations"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestListDeliveriesByRecord: the record filter answers the attempts and
// skipped rows of one record's events, across its events, and nothing of
// another record or another tenant; an unknown record answers none.
func TestListDeliveriesByRecord(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		s := storetest.Open(t, d)
		start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		n := 0
		attempt := func(tenant, event, record string) *models.WebhookDelivery {
			n++
			at := start.Add(time.Duration(n) * time.Minute)
			row := &models.WebhookDelivery{
				TenantID: tenant, EventID: event, EventType: models.EventRecordUpdated, RecordID: record, EndpointID: "whe_1",
				WorkflowID: "webhook-delivery/" + event + "/whe_1", RunID: "run-1", Attempt: 1,
				RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{},
				Error: models.DeliveryErrInFlight, StartedAt: at, FinishedAt: at,
			}
			if err := s.InsertAttempt(ctx, row); err != nil {
				t.Fatal(err)
			}
			return row
		}
		a1 := attempt("ten_1", "evt_1", "rec_a")
		a2 := attempt("ten_1", "evt_2", "rec_a")
		attempt("ten_1", "evt_3", "rec_b")
		attempt("ten_2", "evt_4", "rec_a")
		attempt("ten_1", "evt_5", "") // an event about no record
		ev := &models.Event{ID: "evt_6", TenantID: "ten_1", RecordID: "rec_a", Type: models.EventRecordDeleted}
		if err := s.InsertSkippedDeliveries(ctx, ev, []models.WebhookEndpoint{{ID: "whe_2", URL: "https://b.example/"}}); err != nil {
			t.Fatal(err)
		}
		skipped := models.SkippedDeliveryID("evt_6", "whe_2")

		for _, tc := range []struct {
			tenant, record string
			want           []string
		}{
			{"ten_1", "rec_a", []string{skipped, a2.ID, a1.ID}}, // newest first; skipped rows are stamped now
			{"ten_1", "rec_nope", nil},
			{"ten_3", "rec_a", nil},
		} {
			rows, total, err := s.ListDeliveries(ctx, tc.tenant, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 10}, RecordID: tc.record})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.ID)
				if r.RecordID != tc.record {
					t.Errorf("row %s has record %q, want %q", r.ID, r.RecordID, tc.record)
				}
			}
			if diff := cmp.Diff(got, tc.want); diff != "" || total != int64(len(tc.want)) {
				t.Errorf("%s's deliveries of %s: total %d (-got +want):\n%s", tc.tenant, tc.record, total, diff)
			}
		}
	})
}

// TestDeliveryRecordBackfill: the migration that adds record_id gives the
// rows already there their event's record; a row whose event was purged,
// and the rows of an event about no record, keep it empty.
func TestDeliveryRecordBackfill(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		db := storetest.NewDB(t, d)
		h := db.SQL(t)
		fsys, dialect := fs.FS(migrations.SQLite), goose.DialectSQLite3
		sub := "sqlite"
		if d == models.Postgres {
			fsys, dialect, sub = migrations.Postgres, goose.DialectPostgres, "postgres"
		}
		fsys, err := fs.Sub(fsys, sub)
		if err != nil {
			t.Fatal(err)
		}
		p, err := goose.NewProvider(dialect, h, fsys)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.UpTo(ctx, 8); err != nil {
			t.Fatalf("migrate to 8: %v", err)
		}
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := h.ExecContext(ctx, db.Rebind(q), args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		for _, ev := range [][2]string{{"evt_1", "rec_a"}, {"evt_2", "rec_b"}, {"evt_3", ""}} {
			exec("INSERT INTO events (id, tenant_id, module_id, record_id, type, payload, occurred_at) VALUES (?, 'ten_1', 'mod_1', ?, 'record_created', '{}', ?)",
				ev[0], ev[1], now)
		}
		// evt_9 was purged by retention; its delivery row was kept.
		for i, ev := range []string{"evt_1", "evt_1", "evt_2", "evt_3", "evt_9"} {
			exec("INSERT INTO webhook_deliveries (id, tenant_id, event_id, event_type, endpoint_id, workflow_id, run_id, attempt, request_url, request_body, started_at, finished_at) "+
				"VALUES (?, 'ten_1', ?, 'record_created', 'whe_1', '', '', 1, '', '', ?, ?)",
				"whd_"+string(rune('a'+i)), ev, now, now)
		}

		s := db.Open(t, models.Options{})
		got := map[string]string{}
		rows, _, err := s.ListDeliveries(ctx, "ten_1", models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			got[r.ID] = r.RecordID
		}
		want := map[string]string{"whd_a": "rec_a", "whd_b": "rec_a", "whd_c": "rec_b", "whd_d": "", "whd_e": ""}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("record ids after the migration (-got +want):\n%s", diff)
		}
		byRecord, _, err := s.ListDeliveries(ctx, "ten_1", models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 10}, RecordID: "rec_a"})
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, r := range byRecord {
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		if diff := cmp.Diff(ids, []string{"whd_a", "whd_b"}); diff != "" {
			t.Errorf("rec_a's deliveries after the migration (-got +want):\n%s", diff)
		}
	})
}
