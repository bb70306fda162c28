package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestListCountUpTo: a bounded count stops one row past its bound, so
// that a caller can tell "exactly n" from "more than n" without reading
// every matching row; unbounded, it counts them all.
func TestListCountUpTo(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := storetest.Open(t, d)
			tenant := "ten_count"
			base := time.Date(2021, 5, 1, 0, 0, 0, 0, time.UTC)
			logs := make([]models.AccessLog, 9)
			for i := range logs {
				at := base.Add(time.Duration(i) * time.Second)
				logs[i] = models.AccessLog{ID: fmt.Sprintf("log_%d", i), TenantID: &tenant, Method: "GET", Path: "/", Route: "/",
					Status: 200, RequestID: "r", CreatedAt: at}
				if err := s.InsertDelivery(ctx, &models.WebhookDelivery{ID: fmt.Sprintf("whd_%d", i), TenantID: tenant, EventID: "evt",
					EventType: models.EventRecordCreated, EndpointID: "whe_1", WorkflowID: "wf", RunID: "run", Attempt: 1,
					RequestURL: "https://example.com/", RequestBody: "{}", StartedAt: at, FinishedAt: at}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.InsertAccessLogs(ctx, logs); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				upTo, want int64
			}{{0, 9}, {5, 6}, {8, 9}, {9, 9}, {20, 9}} {
				page := models.Page{Page: 1, Limit: 2}
				_, got, err := s.ListAccessLogs(ctx, tenant, models.AccessLogQuery{Page: page, CountUpTo: tc.upTo})
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("access logs counted up to %d: total %d, want %d", tc.upTo, got, tc.want)
				}
				rows, got, err := s.ListDeliveries(ctx, tenant, models.DeliveryQuery{Page: page, CountUpTo: tc.upTo, EndpointID: "whe_1"})
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want || len(rows) != 2 {
					t.Errorf("deliveries counted up to %d: total %d and %d rows, want %d and 2", tc.upTo, got, len(rows), tc.want)
				}
			}
		})
	}
}
