package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestConcurrentWrites: writes that share a commit (SQLite's group commit)
// or race (PostgreSQL) each get their own outcome; a failing write takes
// nothing of the others with it, and counts stay exact.
func TestConcurrentWrites(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.Open(t, d)
			tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
			if err != nil {
				t.Fatal(err)
			}
			fields := []models.Field{{Name: "n", Type: models.TypeInteger, Required: true}}
			slug, name := "things", "Things"
			m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
			if err != nil {
				t.Fatal(err)
			}
			target, err := s.CreateRecord(ctx, m, map[string]any{"n": 0}, nil)
			if err != nil {
				t.Fatal(err)
			}

			const writers = 40
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Go(func() {
					switch i % 4 {
					case 0: // invalid: fails validation inside the transaction path
						_, errs[i] = s.CreateRecord(ctx, m, map[string]any{"n": "not a number"}, nil)
					case 1: // stale If-Match: fails inside the transaction
						stale := int64(99)
						_, _, errs[i] = s.UpdateRecord(ctx, m, target.ID, models.RecordPatch{CustomData: map[string]any{fmt.Sprint(i): i}}, &stale)
					case 2:
						_, _, errs[i] = s.UpdateRecord(ctx, m, target.ID, models.RecordPatch{CustomData: map[string]any{fmt.Sprint(i): i}}, nil)
					default:
						_, errs[i] = s.CreateRecord(ctx, m, map[string]any{"n": i}, nil)
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				want := map[int]models.Kind{0: models.KindValidation, 1: models.KindPrecondition}[i%4]
				if want == "" && err != nil {
					t.Errorf("writer %d: %v", i, err)
				}
				if want != "" && models.ErrorKind(err) != want {
					t.Errorf("writer %d: %v, want %s", i, err, want)
				}
			}
			got, total, err := s.ListRecords(ctx, m, models.RecordQuery{Page: models.Page{Page: 1, Limit: 100}})
			if err != nil {
				t.Fatal(err)
			}
			if want := 1 + writers/4; total != int64(want) || len(got) != want {
				t.Errorf("%d records (total %d), want %d", len(got), total, want)
			}
			r, err := s.GetRecord(ctx, tenant.ID, m.ID, target.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(1 + writers/4); r.Version != want {
				t.Errorf("target at version %d, want %d (one per successful update)", r.Version, want)
			}
		})
	}
}

// TestNumberFiltersBindNumbers: the store binds a number filter as a
// number, so that a value strconv reads but JSON does not (callers refuse
// those first) matches by its value or is refused as invalid, alike on
// both databases, and never fails as an internal error.
func TestNumberFiltersBindNumbers(t *testing.T) {
	const refused = -1
	cases := []struct {
		field, value string
		want         int64 // matching records, or refused
	}{
		{"n", "5", 1}, {"n", "+5", 1}, {"n", "05", 1}, {"n", "-0", 0}, {"n", "9223372036854775807", 0},
		{"x", "0.25", 1}, {"x", ".5", 1}, {"x", "0x1p-2", 1}, {"x", "5.", 0}, {"x", "+0.5", 1}, {"x", "1e300", 0},
		{"x", "NaN", refused}, {"x", "Infinity", refused}, {"x", "-inf", refused}, {"x", "1e400", refused},
		{"x", "1e-400", refused}, {"x", "0x10", refused}, {"x", "1_000", 0}, {"x", "", refused}, {"x", " 1", refused},
		{"n", "99999999999999999999", 0},
	}
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.Open(t, d)
			tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
			if err != nil {
				t.Fatal(err)
			}
			fields := []models.Field{{Name: "n", Type: models.TypeInteger}, {Name: "x", Type: models.TypeNumber}}
			slug, name := "things", "Things"
			m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []map[string]any{{"n": 1, "x": 0.25}, {"n": 5, "x": 0.5}} {
				if _, err := s.CreateRecord(ctx, m, f, nil); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range cases {
				q := models.RecordQuery{Page: models.Page{Page: 1, Limit: 10}, Filters: map[string]any{c.field: json.Number(c.value)}}
				_, total, err := s.ListRecords(ctx, m, q)
				got := total
				if err != nil {
					if kind := models.ErrorKind(err); kind != models.KindInvalid {
						t.Errorf("%s=%q: %v (%s), want matches or %s", c.field, c.value, err, kind, models.KindInvalid)
						continue
					}
					got = refused
				}
				if got != c.want {
					t.Errorf("%s=%q: %d matches, want %d (-1: refused)", c.field, c.value, got, c.want)
				}
			}
		})
	}
}
