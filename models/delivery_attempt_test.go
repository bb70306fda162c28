package models_test

import (
	"errors"
	"strconv"
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

// TestSettleLostAttempts: settling a run marks its rows still in flight
// worker_lost, finished at the given time, and leaves finished rows and
// other runs' rows alone; a second settle changes nothing.
func TestSettleLostAttempts(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			s := storetest.Open(t, d)
			start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			row := func(run string, attempt int, errCode string) *models.WebhookDelivery {
				at := start.Add(time.Duration(attempt) * time.Minute)
				return &models.WebhookDelivery{
					TenantID: "ten_1", EventID: "evt_1", EventType: models.EventRecordCreated, EndpointID: "whe_1",
					WorkflowID: "webhook-delivery/evt_1/whe_1", RunID: run, Attempt: attempt,
					RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{},
					Error: errCode, StartedAt: at, FinishedAt: at,
				}
			}
			failed := row("run-1", 1, models.DeliveryErrHTTPStatus)
			last := row("run-1", 2, models.DeliveryErrInFlight)
			otherRun := row("run-0", 2, models.DeliveryErrInFlight)
			for _, r := range []*models.WebhookDelivery{failed, last, otherRun} {
				if err := s.InsertDelivery(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			// In another zone: the row is written in UTC all the same.
			at := start.Add(time.Hour).In(time.FixedZone("east", 3*3600))
			n, err := s.SettleLostAttempts(ctx, "evt_1", "whe_1", "webhook-delivery/evt_1/whe_1", "run-1", at)
			if err != nil {
				t.Fatalf("SettleLostAttempts: %v", err)
			}
			if n != 1 {
				t.Errorf("settled %d rows, want 1", n)
			}
			type view struct {
				Error    string
				Finished time.Time
				Message  bool
			}
			got := map[string]view{}
			for _, r := range []*models.WebhookDelivery{failed, last, otherRun} {
				g := getDelivery(t, s, r.ID)
				got[r.ID] = view{g.Error, g.FinishedAt.UTC(), g.ErrorMessage != ""}
			}
			want := map[string]view{
				failed.ID:   {models.DeliveryErrHTTPStatus, failed.FinishedAt, false},
				last.ID:     {models.DeliveryErrWorkerLost, at.UTC(), true},
				otherRun.ID: {models.DeliveryErrInFlight, otherRun.FinishedAt, false},
			}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("rows after settling run-1 (-got +want):\n%s", diff)
			}

			n, err = s.SettleLostAttempts(ctx, "evt_1", "whe_1", "webhook-delivery/evt_1/whe_1", "run-1", at.Add(time.Hour))
			if err != nil || n != 0 {
				t.Errorf("second SettleLostAttempts: %d rows, %v; want 0, nil", n, err)
			}
			if g := getDelivery(t, s, last.ID); !g.FinishedAt.Equal(at) {
				t.Errorf("second settle moved finished_at to %v, want %v", g.FinishedAt, at)
			}
		})
	}
}

// TestNextAttempt: the number after the highest attempt of the run's rows,
// whatever their state, and 1 for a run without rows; other runs and other
// endpoints do not count.
func TestNextAttempt(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			s := storetest.Open(t, d)
			at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			for _, r := range []struct {
				endpoint, run string
				attempt       int
				errCode       string
			}{
				{"whe_1", "run-1", 1, models.DeliveryErrWorkerLost},
				{"whe_1", "run-1", 2, models.DeliveryErrInFlight},
				{"whe_1", "run-0", 7, models.DeliveryErrHTTPStatus},
				{"whe_2", "run-1", 9, models.DeliveryErrHTTPStatus},
			} {
				row := &models.WebhookDelivery{
					TenantID: "ten_1", EventID: "evt_1", EventType: models.EventRecordCreated, EndpointID: r.endpoint,
					WorkflowID: "webhook-delivery/evt_1/" + r.endpoint, RunID: r.run, Attempt: r.attempt,
					RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{},
					Error: r.errCode, StartedAt: at, FinishedAt: at,
				}
				if err := s.InsertDelivery(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []struct {
				run  string
				want int
			}{{"run-1", 3}, {"run-2", 1}} {
				got, err := s.NextAttempt(ctx, "evt_1", "whe_1", "webhook-delivery/evt_1/whe_1", c.run)
				if err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("NextAttempt(%s) = %d, want %d", c.run, got, c.want)
				}
			}
		})
	}
}

// TestFinishDelivery: the attempt that ends a delivery writes its outcome
// and the endpoint's health in one call, as FinishAttempt and
// RecordDeliveryEnd one after the other would: failures count and, past
// the window, disable the endpoint with its event; a success resets the
// count; a missing row is ErrNotFound and counts nothing.
func TestFinishDelivery(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			s := storetest.Open(t, d)
			tenantID, _ := newTenant(t, s)
			ep := newHookEndpoint(t, s, tenantID)
			start := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
			finish := func(n int, ok bool, window time.Duration) {
				t.Helper()
				at := start.Add(time.Duration(n) * time.Hour)
				row := &models.WebhookDelivery{
					TenantID: ep.TenantID, EventID: "evt_" + strconv.Itoa(n), EventType: models.EventRecordCreated, EndpointID: ep.ID,
					WorkflowID: "wf", RunID: "run", Attempt: 1, RequestURL: ep.URL, RequestHeaders: models.Headers{},
					ResponseHeaders: models.Headers{}, Error: models.DeliveryErrInFlight, StartedAt: at, FinishedAt: at,
				}
				if err := s.InsertAttempt(ctx, row); err != nil {
					t.Fatal(err)
				}
				status := 500
				row.Error, row.ErrorMessage = models.DeliveryErrHTTPStatus, "HTTP 500"
				if ok {
					status, row.Error, row.ErrorMessage = 204, "", ""
				}
				row.ResponseStatus, row.Succeeded, row.FinishedAt = &status, ok, at.Add(time.Second)
				healthErr, err := s.FinishDelivery(ctx, row, models.DeliveryEnd{Succeeded: ok, At: at, DisableAfter: window})
				if err != nil || healthErr != nil {
					t.Fatalf("FinishDelivery %d: %v, health %v", n, err, healthErr)
				}
				got, err := s.GetDelivery(ctx, ep.TenantID, row.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.InFlight() || got.Succeeded != ok || *got.ResponseStatus != status {
					t.Fatalf("row %d after FinishDelivery: error %q, succeeded %v", n, got.Error, got.Succeeded)
				}
			}
			health := func() *models.WebhookEndpoint {
				t.Helper()
				got, err := s.GetEndpoint(ctx, ep.TenantID, ep.ID)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}

			finish(1, false, 0)
			finish(2, false, 0)
			if got := health(); got.ConsecutiveFailures != 2 || got.FirstFailureAt == nil || !got.Enabled {
				t.Fatalf("after two failures: %d failures since %v, enabled %v; want 2, since hour 1, enabled", got.ConsecutiveFailures, got.FirstFailureAt, got.Enabled)
			}
			finish(3, true, 0)
			if got := health(); got.ConsecutiveFailures != 0 || got.FirstFailureAt != nil || got.LastSuccessAt == nil || !got.LastSuccessAt.Equal(start.Add(3*time.Hour)) {
				t.Fatalf("after a success: %d failures since %v, last success %v; want 0, none, hour 3", got.ConsecutiveFailures, got.FirstFailureAt, got.LastSuccessAt)
			}
			for n := 4; n < 4+models.DisableAfterFailures; n++ {
				finish(n, false, time.Hour)
			}
			if got := health(); got.Enabled || got.DisabledReason == nil || *got.DisabledReason != models.DisabledFailing {
				t.Fatalf("after %d failures over hours: enabled %v, reason %v; want disabled, failing", models.DisableAfterFailures, got.Enabled, got.DisabledReason)
			}
			if n := len(disabledEvents(t, s)); n != 1 {
				t.Errorf("%d endpoint_disabled events, want 1", n)
			}

			before := health().ConsecutiveFailures
			missing := &models.WebhookDelivery{ID: "whd_missing", TenantID: ep.TenantID, EndpointID: ep.ID}
			if _, err := s.FinishDelivery(ctx, missing, models.DeliveryEnd{At: start.Add(20 * time.Hour)}); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("FinishDelivery of a missing row: %v, want ErrNotFound", err)
			}
			if got := health().ConsecutiveFailures; got != before {
				t.Errorf("a missing row counted: %d failures, want %d", got, before)
			}
		})
	}
}

// TestFinishDeliveryAfterLost: an outcome that arrives after its row was
// marked worker_lost (the in-flight row is no longer as the attempt wrote
// it) replaces worker_lost and moves the rollup from a lost attempt to
// the outcome; the same finish retried changes nothing more; and a finish
// of a row still in flight counts it once. Counts are checked against a
// recount of the rows.
func TestFinishDeliveryAfterLost(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		s := storetest.Open(t, d)
		tenantID, _ := newTenant(t, s)
		ep := newHookEndpoint(t, s, tenantID)
		at := statsNow.Add(-10 * time.Minute)
		lost := attemptRow(tenantID, ep.ID, "evt_lost", 1, at)
		fresh := attemptRow(tenantID, ep.ID, "evt_fresh", 1, at)
		for _, row := range []*models.WebhookDelivery{lost, fresh} {
			if err := s.InsertAttempt(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		ids := []string{lost.ID, fresh.ID}
		if n, err := s.SettleLostAttempts(ctx, "evt_lost", ep.ID, lost.WorkflowID, lost.RunID, at); err != nil || n != 1 {
			t.Fatalf("SettleLostAttempts: %d rows, %v; want 1", n, err)
		}
		checkStats(t, s, tenantID, []string{ep.ID}, ids) // the lost attempt counts, unsucceeded

		status := 204
		done := func(row *models.WebhookDelivery, ms float64) *models.WebhookDelivery {
			o := *row
			o.Error, o.ErrorMessage, o.ResponseStatus, o.Succeeded, o.DurationMS = "", "", &status, true, ms
			o.FinishedAt = at.Add(time.Second)
			return &o
		}
		end := models.DeliveryEnd{Succeeded: true, At: at.Add(time.Second)}
		for i := range 2 { // the second time, a retried finish
			if healthErr, err := s.FinishDelivery(ctx, done(lost, 120), end); err != nil || healthErr != nil {
				t.Fatalf("FinishDelivery %d of the lost row: %v, health %v", i+1, err, healthErr)
			}
			got, err := s.GetDelivery(ctx, tenantID, lost.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Error != "" || !got.Succeeded || got.ResponseStatus == nil || *got.ResponseStatus != status || got.DurationMS != 120 {
				t.Fatalf("lost row after FinishDelivery %d: error %q, succeeded %v, duration %v", i+1, got.Error, got.Succeeded, got.DurationMS)
			}
			checkStats(t, s, tenantID, []string{ep.ID}, ids)
		}
		if healthErr, err := s.FinishDelivery(ctx, done(fresh, 80), end); err != nil || healthErr != nil {
			t.Fatalf("FinishDelivery of the row in flight: %v, health %v", err, healthErr)
		}
		checkStats(t, s, tenantID, []string{ep.ID}, ids)
		st, err := s.EndpointStatsAt(ctx, tenantID, []string{ep.ID}, statsNow)
		if err != nil {
			t.Fatal(err)
		}
		if got := st[ep.ID]; got.Attempts != 2 || got.Succeeded != 2 {
			t.Errorf("stats: %d attempts, %d succeeded; want 2 and 2", got.Attempts, got.Succeeded)
		}
	})
}
