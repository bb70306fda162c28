package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// BenchmarkAttemptWrites is the store's part of one delivery attempt: its
// row written in flight, then its outcome, on each database. It is what
// keeping the hourly stats rollups adds to (on SQLite, time on the one
// writer that record creates share).
//
//	go test ./models -run '^$' -bench AttemptWrites -benchtime 2000x
func BenchmarkAttemptWrites(b *testing.B) {
	for _, d := range storetest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			s := storetest.Open(b, d)
			n := 0
			for b.Loop() {
				n++
				at := time.Now()
				evt := fmt.Sprintf("evt_%d", n)
				row := &models.WebhookDelivery{
					TenantID: "ten_1", EventID: evt, EventType: models.EventRecordCreated, EndpointID: "whe_1",
					WorkflowID: "webhook-delivery/" + evt + "/whe_1", RunID: "run", Attempt: 1,
					RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{}, RequestBody: "{}",
					ResponseHeaders: models.Headers{}, Error: models.DeliveryErrInFlight, StartedAt: at, FinishedAt: at,
				}
				if err := s.InsertAttempt(ctx, row); err != nil {
					b.Fatal(err)
				}
				status := 200
				err := s.FinishAttempt(ctx, &models.WebhookDelivery{ID: row.ID, ResponseStatus: &status, ResponseHeaders: models.Headers{},
					DurationMS: float64(5 + n%300), FinishedAt: time.Now(), Succeeded: true})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
