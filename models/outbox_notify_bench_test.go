package models_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkCreateRecordAnnounced: concurrent record creates on PostgreSQL
// with and without the NOTIFY that follows each commit
// (Options.AnnounceEvents). The announcement is sent after the commit,
// coalesced, by one goroutine: the creates must not slow down as they did
// when each transaction notified (a quarter of the rate).
//
//	go test ./models -run '^$' -bench CreateRecordAnnounced -cpu 16
func BenchmarkCreateRecordAnnounced(b *testing.B) {
	for _, announce := range []bool{false, true} {
		b.Run("announce="+strconv.FormatBool(announce), func(b *testing.B) {
			ctx := context.Background()
			s := storetest.NewDB(b, models.Postgres).Open(b, models.Options{AnnounceEvents: announce, MaxOpenConns: 16})
			tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
			if err != nil {
				b.Fatal(err)
			}
			fields := []models.Field{{Name: "title", Type: models.TypeString}}
			slug, name := "things", "Things"
			m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.CreateRecord(ctx, m, map[string]any{"title": "x"}, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
