package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// changesModule creates a tenant and a module with a title and a status.
func changesModule(t *testing.T, s *models.Store) *models.Module {
	t.Helper()
	tenantID, _ := newTenant(t, s)
	fields := []models.Field{
		{Name: "title", Type: models.TypeString},
		{Name: "stage", Type: models.TypeStatus, States: []string{"a", "b"}, Initial: "a"},
	}
	slug := "things"
	m, err := s.CreateModule(context.Background(), tenantID, models.ModuleInput{Slug: &slug, Name: &slug, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readAllChanges reads the module's changes after p by pages of limit.
func readAllChanges(t *testing.T, s *models.Store, m *models.Module, p models.ChangePosition, limit int) ([]models.Change, models.ChangePosition) {
	t.Helper()
	var out []models.Change
	for {
		page, err := s.Changes(context.Background(), m.TenantID, m.ID, p, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			if !p.Less(c.Position) {
				t.Fatalf("change at %+v after %+v: positions must grow", c.Position, p)
			}
			p = c.Position
		}
		out = append(out, page...)
		if len(page) < limit {
			return out, p
		}
	}
}

// waitChanges waits until the module's feed lists n changes. On
// PostgreSQL a read lists a change only once no transaction on the server
// that began before it is open, and tests in parallel hold some open.
func waitChanges(t *testing.T, s *models.Store, m *models.Module, n int) {
	t.Helper()
	storetest.Eventually(t, 30*time.Second, fmt.Sprintf("%d changes listed", n), func() bool {
		got, _ := readAllChanges(t, s, m, models.ChangePosition{}, 100)
		return len(got) >= n
	})
}

func changeTypes(cs []models.Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s v%d", c.Type, c.RecordVersion))
	}
	return out
}

// TestChanges: a module's changes in commit order by pages, a record's in
// version order; another module's, another tenant's and operational
// events are not listed; the latest position is the last change's.
func TestChanges(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		m := changesModule(t, s)
		other := changesModule(t, s)
		start, err := s.LatestChange(ctx, m.TenantID, m.ID)
		if err != nil || start != (models.ChangePosition{}) {
			t.Fatalf("latest of an empty module: %+v, %v; want the zero position", start, err)
		}
		r, err := s.CreateRecord(ctx, m, map[string]any{"title": "one"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateRecord(ctx, other, map[string]any{"title": "elsewhere"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.UpdateRecord(ctx, m, r.ID, models.RecordPatch{Fields: map[string]any{"title": "two", "stage": "b"}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.UpdateRecord(ctx, m, r.ID, models.RecordPatch{CustomData: map[string]any{"k": 1}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteRecord(ctx, m, r.ID); err != nil {
			t.Fatal(err)
		}
		want := []string{"record_created v1", "record_updated v2", "status_change v2", "custom_data_updated v3", "record_deleted v4"}
		waitChanges(t, s, m, len(want))
		for _, limit := range []int{1, 2, 100} {
			got, end := readAllChanges(t, s, m, models.ChangePosition{}, limit)
			if !slices.Equal(changeTypes(got), want) {
				t.Errorf("limit %d: changes %q, want %q", limit, changeTypes(got), want)
			}
			latest, err := s.LatestChange(ctx, m.TenantID, m.ID)
			if err != nil || latest != end {
				t.Errorf("latest %+v, %v; want the last change's position %+v", latest, err, end)
			}
		}
		// Another tenant reads nothing of the module.
		if got, err := s.Changes(ctx, other.TenantID, m.ID, models.ChangePosition{}, 10); err != nil || len(got) != 0 {
			t.Errorf("another tenant read %d changes (%v), want none", len(got), err)
		}
	})
}

// TestChangeCursor: a cursor reads back as its position; edited or
// foreign ones are refused as invalid.
func TestChangeCursor(t *testing.T) {
	for _, p := range []models.ChangePosition{{}, {Txid: 0, Seq: 7}, {Txid: 1 << 40, Seq: 1<<62 + 3}} {
		got, err := models.ParseChangeCursor(p.Cursor())
		if err != nil || got != p {
			t.Errorf("cursor of %+v read back as %+v, %v", p, got, err)
		}
	}
	for _, bad := range []string{"", "x", "MTIz", "MS4y=", "LTEuMg", "MDEuMg", "MS4yLjM", "latest"} {
		if _, err := models.ParseChangeCursor(bad); kindOf(err) != models.KindInvalid {
			t.Errorf("cursor %q: %v, want invalid_request", bad, err)
		}
	}
}

// TestChangesCommitOutOfOrder: transaction A writes an event first (the
// lower txid) and stays open while B writes and commits. While A is open
// a read lists neither, since listing B's would move a reader past A's
// position; once A commits, a read from the cursor lists A's event and
// then B's: each exactly once, in txid order. A updates a record and B
// creates one: two creations may count themselves on the same row of the
// module's record count, and B would then wait for A to end.
func TestChangesCommitOutOfOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := storetest.Open(t, models.Postgres)
	m := changesModule(t, s)
	first, err := s.CreateRecord(ctx, m, map[string]any{"title": "before"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitChanges(t, s, m, 1)
	seen, cur := readAllChanges(t, s, m, models.ChangePosition{}, 10)
	if len(seen) != 1 || seen[0].RecordID != first.ID {
		t.Fatalf("read %q before the race, want the one creation", changeTypes(seen))
	}

	wrote, release := make(chan string), make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		aDone <- s.Atomically(ctx, func(ctx context.Context) error {
			r, _, err := s.UpdateRecord(ctx, m, first.ID, models.RecordPatch{Fields: map[string]any{"title": "A"}}, nil)
			if err != nil {
				return err
			}
			wrote <- r.ID
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	var aID string
	select {
	case aID = <-wrote:
	case err := <-aDone:
		t.Fatalf("A failed: %v", err)
	}
	b, err := s.CreateRecord(ctx, m, map[string]any{"title": "B"}, nil)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	held, heldCur := readAllChanges(t, s, m, cur, 10)
	close(release)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if len(held) != 0 || heldCur != cur {
		t.Fatalf("with A open, read %d changes (%q) and moved the cursor to %+v: A's event, committed later at a lower position, would be skipped", len(held), changeTypes(held), heldCur)
	}
	var got []models.Change
	storetest.Eventually(t, 30*time.Second, "both events listed", func() bool {
		page, _ := readAllChanges(t, s, m, cur, 10)
		got = page
		return len(page) >= 2
	})
	var ids []string
	for _, c := range got {
		ids = append(ids, c.RecordID)
	}
	if want := []string{aID, b.ID}; !slices.Equal(ids, want) {
		t.Errorf("after A committed, read records %q, want A's then B's %q", ids, want)
	}
}

// TestChangesPurge: once retention purged a module's changes, a cursor
// before the newest purged one is refused as expired, and one at it or
// later is good; reading without a cursor starts at the oldest kept, and
// the latest position never falls behind the purged ones.
func TestChangesPurge(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		m := changesModule(t, s)
		other := changesModule(t, s)
		for i := range 3 {
			if _, err := s.CreateRecord(ctx, m, map[string]any{"title": fmt.Sprint(i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		waitChanges(t, s, m, 3)
		all, _ := readAllChanges(t, s, m, models.ChangePosition{}, 10)
		if len(all) != 3 {
			t.Fatalf("%d changes, want 3", len(all))
		}
		// The first two were dispatched, the last one not.
		if err := s.MarkDispatched(ctx, []string{all[0].ID, all[1].ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Purge(ctx, models.PurgeEvents, time.Now().Add(time.Hour), 100); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			at   models.ChangePosition
			want error
		}{
			{models.ChangePosition{}, nil},
			{all[0].Position, models.ErrCursorExpired},
			{all[1].Position, nil},
			{all[2].Position, nil},
		} {
			if err := s.CheckChangeCursor(ctx, m.ID, c.at); !errors.Is(err, c.want) {
				t.Errorf("cursor at %+v: %v, want %v", c.at, err, c.want)
			}
		}
		if err := s.CheckChangeCursor(ctx, other.ID, all[0].Position); err != nil {
			t.Errorf("another module's cursor: %v, want good (none of its changes were purged)", err)
		}
		kept, _ := readAllChanges(t, s, m, models.ChangePosition{}, 10)
		if len(kept) != 1 || kept[0].ID != all[2].ID {
			t.Errorf("kept %q, want the last change", changeTypes(kept))
		}
		if err := s.MarkDispatched(ctx, []string{all[2].ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Purge(ctx, models.PurgeEvents, time.Now().Add(time.Hour), 100); err != nil {
			t.Fatal(err)
		}
		latest, err := s.LatestChange(ctx, m.TenantID, m.ID)
		if err != nil || latest != all[2].Position {
			t.Errorf("latest with every change purged: %+v, %v; want the newest purged %+v", latest, err, all[2].Position)
		}
		// New changes after the purge are numbered after the purged ones.
		if _, err := s.CreateRecord(ctx, m, map[string]any{"title": "after"}, nil); err != nil {
			t.Fatal(err)
		}
		storetest.Eventually(t, 30*time.Second, "the new change listed after the purged ones", func() bool {
			after, _ := readAllChanges(t, s, m, latest, 10)
			return len(after) == 1
		})
	})
}

// TestChangeFilter: types, field conditions with operators and time
// conditions, on the record a payload shows.
func TestChangeFilter(t *testing.T) {
	payload := `{"event":"record_updated","record":{"fields":{"title":"beta","n":5},"created_at":"2026-01-02T03:04:05.000006Z","updated_at":"2026-01-03T00:00:00Z"}}`
	rec, err := models.DecodeChangeRecord(payload)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		f    models.ChangeFilter
		typ  string
		want bool
	}{
		{"no filter", models.ChangeFilter{}, "record_updated", true},
		{"type listed", models.ChangeFilter{Types: []string{"record_updated"}}, "record_updated", true},
		{"type not listed", models.ChangeFilter{Types: []string{"record_created"}}, "record_updated", false},
		{"eq", models.ChangeFilter{Fields: map[string]any{"title": map[string]any{"eq": "beta"}}}, "record_updated", true},
		{"prefix", models.ChangeFilter{Fields: map[string]any{"title": map[string]any{"prefix": "al"}}}, "record_updated", false},
		{"gt number", models.ChangeFilter{Fields: map[string]any{"n": map[string]any{"gt": json.Number("4.5")}}}, "record_updated", true},
		{"lt number", models.ChangeFilter{Fields: map[string]any{"n": map[string]any{"lt": json.Number("5")}}}, "record_updated", false},
		{"created after", models.ChangeFilter{Times: []models.TimeCond{{Column: "created_at", Op: models.OpGt, At: day}}}, "record_updated", true},
		{"updated before", models.ChangeFilter{Times: []models.TimeCond{{Column: "updated_at", Op: models.OpLt, At: day}}}, "record_updated", false},
	} {
		if got := c.f.Matches(c.typ, rec); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestChangesEveryWritePath: the events of every path that writes them
// have a position, in the order they were written: a batch's creates
// inserted together, a transaction's several changes (one txid on
// PostgreSQL), besides the single writes the other tests make.
func TestChangesEveryWritePath(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		m := changesModule(t, s)
		recs, err := s.CreateRecords(ctx, m, []models.RecordValues{
			{Fields: map[string]any{"title": "a"}}, {Fields: map[string]any{"title": "b"}}, {Fields: map[string]any{"title": "c"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Atomically(ctx, func(ctx context.Context) error {
			if err := s.LockForChange(ctx, recs[0].ID, recs[1].ID); err != nil {
				return err
			}
			if _, _, err := s.UpdateRecord(ctx, m, recs[1].ID, models.RecordPatch{Fields: map[string]any{"stage": "b"}}, nil); err != nil {
				return err
			}
			_, err := s.DeleteRecord(ctx, m, recs[0].ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"record_created v1", "record_created v1", "record_created v1", "record_updated v2", "status_change v2", "record_deleted v2"}
		waitChanges(t, s, m, len(want))
		got, _ := readAllChanges(t, s, m, models.ChangePosition{}, 100)
		if !slices.Equal(changeTypes(got), want) {
			t.Errorf("changes %q, want %q", changeTypes(got), want)
		}
		var ids []string
		for _, c := range got[:3] {
			ids = append(ids, c.RecordID)
		}
		if want := []string{recs[0].ID, recs[1].ID, recs[2].ID}; !slices.Equal(ids, want) {
			t.Errorf("the batch's creates in the order %q, want %q", ids, want)
		}
	})
}
