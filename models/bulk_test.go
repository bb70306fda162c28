package models_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestBookBulkStarts: bookings of one tenant follow each other, a
// second's worth at most each, from now or from the end of the last one;
// two stores on one database (two processes) book one schedule; another
// tenant has its own; without a pace nothing is written or waited for.
func TestBookBulkStarts(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		db := storetest.NewDB(t, d)
		s1, s2 := db.Open(t, models.Options{BulkRate: 10}), db.Open(t, models.Options{BulkRate: 10})
		a, _, _, err := s1.CreateTenant(ctx, "a", 100)
		if err != nil {
			t.Fatal(err)
		}
		b, _, _, err := s1.CreateTenant(ctx, "b", 100)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		every := 100 * time.Millisecond
		for _, c := range []struct {
			name  string
			store *models.Store
			ten   string
			n     int
			at    time.Time
			want  models.BulkSlots
		}{
			{"a second's worth at most", s1, a.ID, 25, now, models.BulkSlots{First: now, Every: every, N: 10}},
			{"after the last booking, on another store", s2, a.ID, 3, now, models.BulkSlots{First: now.Add(time.Second), Every: every, N: 3}},
			{"another tenant from now", s2, b.ID, 1, now, models.BulkSlots{First: now, Every: every, N: 1}},
			{"from now once the bookings are past", s1, a.ID, 2, now.Add(time.Minute), models.BulkSlots{First: now.Add(time.Minute), Every: every, N: 2}},
		} {
			got, err := c.store.BookBulkStarts(ctx, c.ten, c.n, c.at)
			if err != nil {
				t.Fatal(err)
			}
			got.First = got.First.UTC()
			if diff := cmp.Diff(got, c.want); diff != "" {
				t.Errorf("%s: slots (-got +want):\n%s", c.name, diff)
			}
		}
		unpaced := db.Open(t, models.Options{BulkRate: -1})
		if got, err := unpaced.BookBulkStarts(ctx, a.ID, 500, now); err != nil || got != (models.BulkSlots{First: now, N: 500}) {
			t.Errorf("unpaced: %+v, %v; want all 500 now", got, err)
		}
	})
}
