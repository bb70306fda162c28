package models_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestInsertAttemptMarksLostAttempts: writing attempt n of a workflow run
// marks the run's earlier attempts still in flight worker_lost, and nothing
// else; a late outcome of such an attempt still replaces worker_lost.
func TestInsertAttemptMarksLostAttempts(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			s := storetest.Open(t, d)
			start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			row := func(endpoint, run string, attempt int, errCode string) *models.WebhookDelivery {
				at := start.Add(time.Duration(attempt) * time.Minute)
				return &models.WebhookDelivery{
					TenantID: "ten_1", EventID: "evt_1", EventType: models.EventRecordCreated, EndpointID: endpoint,
					WorkflowID: "webhook-delivery/evt_1/" + endpoint, RunID: run, Attempt: attempt,
					RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{"X-Webhook-Attempt": {"1"}},
					RequestBody: `{"id":"evt_1"}`, ResponseHeaders: models.Headers{},
					Error: errCode, StartedAt: at, FinishedAt: at,
				}
			}
			crashed := row("whe_1", "run-1", 1, models.DeliveryErrInFlight)
			failed := row("whe_1", "run-1", 2, models.DeliveryErrHTTPStatus)
			otherRun := row("whe_1", "run-0", 1, models.DeliveryErrInFlight)
			otherEndpoint := row("whe_2", "run-1", 1, models.DeliveryErrInFlight)
			for _, r := range []*models.WebhookDelivery{crashed, failed, otherRun, otherEndpoint} {
				if err := s.InsertDelivery(ctx, r); err != nil {
					t.Fatal(err)
				}
			}

			third := row("whe_1", "run-1", 3, models.DeliveryErrInFlight)
			if err := s.InsertAttempt(ctx, third); err != nil {
				t.Fatalf("InsertAttempt: %v", err)
			}
			errs := func() map[string]string {
				got := map[string]string{}
				for _, r := range []*models.WebhookDelivery{crashed, failed, otherRun, otherEndpoint, third} {
					got[r.ID] = getDelivery(t, s, r.ID).Error
				}
				return got
			}
			want := map[string]string{
				crashed.ID: models.DeliveryErrWorkerLost, failed.ID: models.DeliveryErrHTTPStatus,
				otherRun.ID: models.DeliveryErrInFlight, otherEndpoint.ID: models.DeliveryErrInFlight, third.ID: models.DeliveryErrInFlight,
			}
			if diff := cmp.Diff(errs(), want); diff != "" {
				t.Errorf("errors after attempt 3 began (-got +want):\n%s", diff)
			}
			if lost := getDelivery(t, s, crashed.ID); !lost.FinishedAt.Equal(third.StartedAt) || lost.ErrorMessage == "" || lost.InFlight() {
				t.Errorf("lost row finished %v, message %q: want finished when attempt 3 started (%v), with a message",
					lost.FinishedAt, lost.ErrorMessage, third.StartedAt)
			}

			// The outcome goes into the same row; the request stays as written.
			status := 204
			outcome := &models.WebhookDelivery{
				ID: third.ID, ResponseStatus: &status, ResponseHeaders: models.Headers{"X-Ok": {"1"}}, ResponseBody: "ok",
				RemoteIP: "93.184.215.14", DurationMS: 12.5, FinishedAt: third.StartedAt.Add(time.Second), Succeeded: true,
			}
			if err := s.FinishAttempt(ctx, outcome); err != nil {
				t.Fatalf("FinishAttempt: %v", err)
			}
			got := getDelivery(t, s, third.ID)
			type view struct {
				Error, RequestBody, ResponseBody string
				Status                           *int
				Succeeded, InFlight              bool
				Finished                         time.Time
			}
			if diff := cmp.Diff(view{got.Error, got.RequestBody, got.ResponseBody, got.ResponseStatus, got.Succeeded, got.InFlight(), got.FinishedAt.UTC()},
				view{"", third.RequestBody, "ok", &status, true, false, outcome.FinishedAt}); diff != "" {
				t.Errorf("finished row (-got +want):\n%s", diff)
			}

			// A worker thought lost that records its outcome after all wins.
			late := &models.WebhookDelivery{ID: crashed.ID, Error: models.DeliveryErrTimeout, ErrorMessage: "no response within 30s",
				ResponseHeaders: models.Headers{}, FinishedAt: start.Add(time.Hour)}
			if err := s.FinishAttempt(ctx, late); err != nil {
				t.Fatalf("late FinishAttempt: %v", err)
			}
			if got := getDelivery(t, s, crashed.ID).Error; got != models.DeliveryErrTimeout {
				t.Errorf("late outcome: error %q, want %q", got, models.DeliveryErrTimeout)
			}

			if err := s.FinishAttempt(ctx, &models.WebhookDelivery{ID: "whd_missing"}); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("FinishAttempt of a missing row: %v, want ErrNotFound", err)
			}
		})
	}
}

func getDelivery(t *testing.T, s *models.Store, id string) *models.WebhookDelivery {
	t.Helper()
	d, err := s.GetDelivery(t.Context(), "ten_1", id)
	if err != nil {
		t.Fatalf("get delivery %s: %v", id, err)
	}
	return d
}
