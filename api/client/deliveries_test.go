package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/models"
)

// TestDeliveries: the list takes every filter the client sends, the
// iterator follows the cursors to the last page, an attempt reads in
// full, and a replay in a process without webhook delivery is a 503.
func TestDeliveries(t *testing.T) {
	ctx := context.Background()
	c, store, tenantID := newAPIStore(t)
	ep, err := c.CreateEndpoint(ctx, client.EndpointInput{URL: "https://hooks.example.com/in", Events: []string{"record_created"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var want []string
	for i := range 5 {
		status := http.StatusOK
		d := &models.WebhookDelivery{
			ID: fmt.Sprintf("whd_%02d", i), TenantID: tenantID, EventID: fmt.Sprintf("evt_%d", i), EventType: "record_created",
			RecordID: "rec_1", EndpointID: ep.ID, WorkflowID: "webhook-delivery/evt/" + ep.ID, RunID: "run", Attempt: 1,
			RequestURL: ep.URL, RequestBody: `{"id":"evt"}`, ResponseStatus: &status, Succeeded: i != 3,
			StartedAt: start.Add(time.Duration(i) * time.Minute), FinishedAt: start.Add(time.Duration(i)*time.Minute + time.Second),
		}
		if !d.Succeeded {
			d.Error, d.ErrorMessage = "http_status", "the receiver answered 500"
		}
		if err := store.InsertAttempt(ctx, d); err != nil {
			t.Fatal(err)
		}
		if d.Succeeded {
			want = append([]string{d.ID}, want...)
		}
	}

	yes := true
	q := client.DeliveryQuery{Limit: 2, EndpointID: ep.ID, RecordID: "rec_1", EventType: "record_created", Succeeded: &yes, Since: start, Until: start.Add(time.Hour)}
	var got []string
	for d, err := range c.Deliveries(ctx, q) {
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, d.ID)
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("walked (-got +want):\n%s", d)
	}
	walk := c.Deliveries(ctx, q)
	for range 2 {
		var again []string
		for d, err := range walk {
			if err != nil {
				t.Fatal(err)
			}
			again = append(again, d.ID)
		}
		if d := cmp.Diff(again, want); d != "" {
			t.Errorf("one iterator walked twice (-got +want):\n%s", d)
		}
	}
	failed, err := c.ListDeliveries(ctx, client.DeliveryQuery{Page: 1, EventID: "evt_3", Error: "http_status"})
	if err != nil {
		t.Fatal(err)
	}
	if len(failed.Data) != 1 || failed.Data[0].ID != "whd_03" || failed.Data[0].Error == nil || failed.NextCursor != nil {
		t.Errorf("failed attempts: %+v, want whd_03 alone", failed)
	}

	full, err := c.GetDelivery(ctx, "whd_03")
	if err != nil {
		t.Fatal(err)
	}
	if full.RequestBody != `{"id":"evt"}` || full.RequestHeaders == nil || *full.Error != "http_status" || full.FinishedAt == nil {
		t.Errorf("read %+v, want the attempt in full", full)
	}

	_, err = c.ReplayDelivery(ctx, "whd_03")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
		t.Errorf("replay without delivery: %v, want a 503", err)
	}
}
