package models_test

import (
	"context"
	"errors"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestAtomically: writes made in Atomically's context commit together, or
// not at all when fn fails, panics or a write of it fails; writes of
// other callers meanwhile go on; a nested call joins the outer one.
func TestAtomically(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		tenantID, _ := newTenant(t, s)
		m := thingsModule(t, s, tenantID)
		kept, err := s.CreateRecord(ctx, m, map[string]any{"n": 0}, nil)
		if err != nil {
			t.Fatal(err)
		}
		count := func() int64 {
			t.Helper()
			_, total, err := s.ListRecords(ctx, m, models.RecordQuery{Page: models.Page{Page: 1, Limit: 100}})
			if err != nil {
				t.Fatal(err)
			}
			return total
		}
		events := func() int {
			t.Helper()
			evs, err := s.PendingEvents(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			return len(evs)
		}
		baseEvents := events()

		// A failure after two writes undoes both, and the patch of the
		// record that stayed.
		boom := errors.New("boom")
		err = s.Atomically(ctx, func(ctx context.Context) error {
			if !models.InTransaction(ctx) {
				t.Error("fn's context is not in a transaction")
			}
			if err := s.LockForChange(ctx, kept.ID); err != nil {
				return err
			}
			if _, err := s.CreateRecord(ctx, m, map[string]any{"n": 1}, nil); err != nil {
				return err
			}
			if _, _, err := s.UpdateRecord(ctx, m, kept.ID, models.RecordPatch{Fields: map[string]any{"n": 5}}, nil); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Atomically = %v, want fn's error", err)
		}
		if n := count(); n != 1 {
			t.Errorf("records after a failed transaction = %d, want 1", n)
		}
		if got := events() - baseEvents; got != 0 {
			t.Errorf("events after a failed transaction = %d more, want none", got)
		}
		r, err := s.GetRecord(ctx, tenantID, m.ID, kept.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Version != 1 {
			t.Errorf("patched record at version %d after a failed transaction, want 1", r.Version)
		}

		// A failing write fails the transaction it is in.
		err = s.Atomically(ctx, func(ctx context.Context) error {
			if _, err := s.CreateRecord(ctx, m, map[string]any{"n": 2}, nil); err != nil {
				return err
			}
			_, err := s.CreateRecord(ctx, m, map[string]any{"n": "two"}, nil)
			return err
		})
		if models.ErrorKind(err) != models.KindValidation {
			t.Fatalf("Atomically with an invalid write = %v, want a validation error", err)
		}
		if n := count(); n != 1 {
			t.Errorf("records after a failed write = %d, want 1", n)
		}

		// A panic is raised again in the caller and rolls back.
		func() {
			defer func() {
				if v := recover(); v != "bad" {
					t.Errorf("recovered %v, want the panic of fn", v)
				}
			}()
			_ = s.Atomically(ctx, func(ctx context.Context) error {
				if _, err := s.CreateRecord(ctx, m, map[string]any{"n": 3}, nil); err != nil {
					return err
				}
				panic("bad")
			})
		}()
		if n := count(); n != 1 {
			t.Errorf("records after a panic = %d, want 1", n)
		}

		// Success commits every write, nested calls included, and the
		// store still takes writes of its own afterwards.
		err = s.Atomically(ctx, func(ctx context.Context) error {
			for i := range 3 {
				if _, err := s.CreateRecord(ctx, m, map[string]any{"n": 10 + i}, nil); err != nil {
					return err
				}
			}
			return s.Atomically(ctx, func(ctx context.Context) error {
				_, err := s.DeleteRecord(ctx, m, kept.ID)
				return err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateRecord(ctx, m, map[string]any{"n": 20}, nil); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 4 {
			t.Errorf("records after a committed transaction = %d, want 4", n)
		}
		if got := events() - baseEvents; got != 5 {
			t.Errorf("events after a committed transaction = %d more, want 5", got)
		}
	})
}

// TestAtomicallyNestedFailure: a nested call that fails undoes its own
// writes only; the outer transaction goes on and commits the rest.
func TestAtomicallyNestedFailure(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		tenantID, _ := newTenant(t, s)
		m := thingsModule(t, s, tenantID)
		boom := errors.New("boom")
		var kept []string
		err := s.Atomically(ctx, func(ctx context.Context) error {
			r, err := s.CreateRecord(ctx, m, map[string]any{"n": 1}, nil)
			if err != nil {
				return err
			}
			kept = append(kept, r.ID)
			err = s.Atomically(ctx, func(ctx context.Context) error {
				if _, err := s.CreateRecord(ctx, m, map[string]any{"n": 2}, nil); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Errorf("nested Atomically = %v, want its fn's error", err)
			}
			r, err = s.CreateRecord(ctx, m, map[string]any{"n": 3}, nil)
			if err != nil {
				return err
			}
			kept = append(kept, r.ID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		recs, _, err := s.ListRecords(ctx, m, models.RecordQuery{Page: models.Page{Page: 1, Limit: 10}, Sort: "created_at"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.ID)
		}
		evs, err := s.PendingEvents(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != kept[0] || got[1] != kept[1] || len(evs) != 2 {
			t.Errorf("records %v and %d events after a failed nested call, want %v and 2", got, len(evs), kept)
		}
	})
}
