package activities

import (
	"fmt"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestRecoverPageFilter: a recovery applies the endpoint's filter as it
// is when the page runs: an event whose record fails it is found, and
// neither replayed nor failed.
func TestRecoverPageFilter(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			s := storetest.Open(t, d)
			f := newFixture(t, s, "https://hooks.example.com/")
			m, err := s.CreateModule(ctx, f.tenantID, models.ModuleInput{Slug: ptr("orders"), Name: ptr("Orders"),
				Fields: &[]models.Field{{Name: "title", Type: models.TypeString}}})
			if err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(-time.Hour).UTC()
			byTitle := map[string]string{}
			for _, title := range []string{"keep", "drop"} {
				before, err := s.PendingEvents(ctx, 100)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.CreateRecord(ctx, m, map[string]any{"title": title}, nil); err != nil {
					t.Fatal(err)
				}
				after, err := s.PendingEvents(ctx, 100)
				if err != nil || len(after) != len(before)+1 {
					t.Fatalf("events %d after %d, %v", len(after), len(before), err)
				}
				ev := after[len(after)-1]
				byTitle[title] = ev.ID
				row := &models.WebhookDelivery{TenantID: f.tenantID, EventID: ev.ID, EventType: ev.Type, EndpointID: f.endpoint.ID,
					WorkflowID: "wf", RunID: "run", Attempt: 1, RequestURL: f.endpoint.URL, RequestHeaders: models.Headers{},
					ResponseHeaders: models.Headers{}, Error: models.DeliveryErrHTTPStatus, StartedAt: at, FinishedAt: at}
				if err := s.InsertAttempt(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			// The filter set after the attempts failed.
			filter, modules := map[string]any{"title": "keep"}, []string{m.ID}
			if _, err := s.UpdateEndpoint(ctx, f.tenantID, f.endpoint.ID, models.EndpointInput{ModuleIDs: &modules, Filter: &filter}, nil); err != nil {
				t.Fatal(err)
			}
			rec, err := s.CreateRecovery(ctx, f.endpoint, at.Add(-time.Minute), time.Now().UTC(), time.Now().UTC(), func(n int) string { return fmt.Sprint("rcv-wf-", n) })
			if err != nil {
				t.Fatal(err)
			}
			replays := &fakeReplays{started: map[string]string{}}
			out, err := NewRecoverer(s, replays, 2, nil).RecoverPage(ctx, RecoverPageInput{
				RecoveryID: rec.ID, TenantID: f.tenantID, EndpointID: f.endpoint.ID,
				Since: rec.WindowSince, Until: rec.WindowUntil, AsOf: rec.WindowUntil, Limit: 10,
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.Found != 2 || out.Replayed != 1 || out.Failed != 0 {
				t.Errorf("page %+v, want found 2, replayed 1, failed 0", out)
			}
			if _, ok := replays.started[replays.ReplayWorkflowID(byTitle["keep"], f.endpoint.ID, 1)]; !ok || len(replays.started) != 1 {
				t.Errorf("replays %v, want the matching event's only", replays.started)
			}
		})
	}
}
