package activities

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestRecoverPage: a page replays each failed event once, counts a purged
// event as failed, writes the progress on top of what came before, and
// when it is retried after a failed start starts nothing twice; a
// disabled or deleted endpoint stops the recovery.
func TestRecoverPage(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			s := storetest.Open(t, d)
			f := newFixture(t, s, "https://hooks.example.com/")
			m, err := s.CreateModule(ctx, f.tenantID, models.ModuleInput{Slug: ptr("more"), Name: ptr("More")})
			if err != nil {
				t.Fatal(err)
			}
			for range 4 {
				if _, err := s.CreateRecord(ctx, m, map[string]any{}, nil); err != nil {
					t.Fatal(err)
				}
			}
			events, err := s.PendingEvents(ctx, 10)
			if err != nil || len(events) != 5 {
				t.Fatalf("events %d, %v", len(events), err)
			}
			at := time.Now().Add(-time.Hour).UTC()
			rows := map[string]string{}
			for _, ev := range events {
				row := &models.WebhookDelivery{TenantID: f.tenantID, EventID: ev.ID, EventType: ev.Type, EndpointID: f.endpoint.ID,
					WorkflowID: "wf", RunID: "run", Attempt: 1, RequestURL: f.endpoint.URL, RequestHeaders: models.Headers{},
					ResponseHeaders: models.Headers{}, Error: models.DeliveryErrHTTPStatus, StartedAt: at, FinishedAt: at}
				if err := s.InsertAttempt(ctx, row); err != nil {
					t.Fatal(err)
				}
				rows[ev.ID] = row.ID
			}
			// The last event was purged since.
			purged := events[4].ID
			if err := s.MarkDispatched(ctx, []string{purged}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Purge(ctx, models.PurgeEvents, time.Now().Add(time.Hour), 1000); err != nil {
				t.Fatal(err)
			}

			rec, err := s.CreateRecovery(ctx, f.endpoint, at.Add(-time.Minute), time.Now().UTC(), time.Now().UTC(), func(n int) string { return fmt.Sprint("rcv-wf-", n) })
			if err != nil {
				t.Fatal(err)
			}
			replays := &fakeReplays{started: map[string]string{}, fail: map[string]error{events[2].ID: errors.New("temporal went away")}}
			r := NewRecoverer(s, replays, 2, nil)
			in := RecoverPageInput{
				RecoveryID: rec.ID, TenantID: f.tenantID, EndpointID: f.endpoint.ID,
				Since: rec.WindowSince, Until: rec.WindowUntil, AsOf: rec.WindowUntil, Limit: 10,
				Before: models.RecoveryProgress{Found: 7, Replayed: 6, Failed: 1},
			}
			if _, err := r.RecoverPage(ctx, in); err == nil {
				t.Fatal("a page with a failed start succeeded")
			}
			delete(replays.fail, events[2].ID)
			out, err := r.RecoverPage(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if want := (RecoverPageOutput{Found: 5, Replayed: 4, Failed: 1, Last: events[4].ID, Done: true}); out != want {
				t.Errorf("page %+v, want %+v", out, want)
			}
			if len(replays.started) != 4 {
				t.Errorf("%d replays started over two tries, want 4, one per stored event", len(replays.started))
			}
			for _, ev := range events[:4] {
				if got := replays.started[replays.ReplayWorkflowID(ev.ID, f.endpoint.ID, 1)]; got != rows[ev.ID] {
					t.Errorf("replay of %s replays %q, want its failed attempt %s", ev.ID, got, rows[ev.ID])
				}
			}
			got, err := s.GetRecovery(ctx, f.tenantID, f.endpoint.ID, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Found != 12 || got.Replayed != 10 || got.Failed != 2 {
				t.Errorf("progress %d/%d/%d, want 12/10/2 (the page's counts on top of before)", got.Found, got.Replayed, got.Failed)
			}

			for _, step := range []struct {
				name   string
				change func() error
			}{
				{"disabled", func() error {
					_, err := s.UpdateEndpoint(ctx, f.tenantID, f.endpoint.ID, models.EndpointInput{Enabled: ptr(false)}, nil)
					return err
				}},
				{"deleted", func() error { return s.DeleteEndpoint(ctx, f.tenantID, f.endpoint.ID) }},
			} {
				name := step.name
				if err := step.change(); err != nil {
					t.Fatal(err)
				}
				var appErr *temporal.ApplicationError
				_, err := r.RecoverPage(ctx, in)
				if !errors.As(err, &appErr) || appErr.Type() != ErrTypeRecoveryStopped || !appErr.NonRetryable() {
					t.Errorf("endpoint %s: %v, want a non-retryable %s", name, err, ErrTypeRecoveryStopped)
				}
			}
		})
	}
}
