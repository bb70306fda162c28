package activities

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestRecoverPageCap: pages stop at the recovery's cap. A recovery with
// events left past it ends (Done) with the row saying it was capped, the
// last event taken and where the next recovery starts; one whose events
// number exactly the cap ends without being capped.
func TestRecoverPageCap(t *testing.T) {
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
			for _, ev := range events {
				row := &models.WebhookDelivery{TenantID: f.tenantID, EventID: ev.ID, EventType: ev.Type, EndpointID: f.endpoint.ID,
					WorkflowID: "wf", RunID: "run", Attempt: 1, RequestURL: f.endpoint.URL, RequestHeaders: models.Headers{},
					ResponseHeaders: models.Headers{}, Error: models.DeliveryErrHTTPStatus, StartedAt: at, FinishedAt: at}
				if err := s.InsertAttempt(ctx, row); err != nil {
					t.Fatal(err)
				}
			}
			idTime := func(id string) time.Time {
				t.Helper()
				u, err := ulid.ParseStrict(id[len(models.PrefixEvent):])
				if err != nil {
					t.Fatal(err)
				}
				return ulid.Time(u.Time()).UTC()
			}
			since := at.Add(-48 * time.Hour)

			for _, c := range []struct {
				name      string
				max       int
				pages     []RecoverPageOutput
				capped    bool
				atEvent   string
				nextSince time.Time
			}{
				{"events left past the cap", 3, []RecoverPageOutput{
					{Found: 2, Replayed: 2, Last: events[1].ID},
					{Found: 1, Replayed: 1, Last: events[2].ID, Done: true, Capped: true},
				}, true, events[2].ID, idTime(events[3].ID)},
				{"as many events as the cap", 5, []RecoverPageOutput{
					{Found: 2, Replayed: 2, Last: events[1].ID},
					{Found: 2, Replayed: 2, Last: events[3].ID},
					{Found: 1, Replayed: 1, Last: events[4].ID, Done: true},
				}, false, "", time.Time{}},
				{"fewer events than the cap", 6, []RecoverPageOutput{
					{Found: 2, Replayed: 2, Last: events[1].ID},
					{Found: 2, Replayed: 2, Last: events[3].ID},
					{Found: 1, Replayed: 1, Last: events[4].ID, Done: true},
				}, false, "", time.Time{}},
			} {
				t.Run(c.name, func(t *testing.T) {
					rec, err := s.CreateRecovery(ctx, f.endpoint, since, time.Now().UTC(), time.Now().UTC(), func(n int) string { return fmt.Sprint("rcv-wf-", n) })
					if err != nil {
						t.Fatal(err)
					}
					defer func() {
						if err := s.FinishRecovery(ctx, rec.ID, models.RecoveryCompleted, models.RecoveryProgress{}, "", time.Now()); err != nil {
							t.Fatal(err)
						}
					}()
					r := NewRecoverer(s, &fakeReplays{started: map[string]string{}}, 2, nil)
					in := RecoverPageInput{
						RecoveryID: rec.ID, TenantID: f.tenantID, EndpointID: f.endpoint.ID,
						Since: rec.WindowSince, Until: rec.WindowUntil, AsOf: rec.WindowUntil, Limit: 2, MaxEvents: c.max,
					}
					var got []RecoverPageOutput
					for len(got) < 10 {
						out, err := r.RecoverPage(ctx, in)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, out)
						if out.Done {
							break
						}
						in.After, in.Before.Found = out.Last, in.Before.Found+out.Found
					}
					if diff := cmp.Diff(got, c.pages); diff != "" {
						t.Errorf("pages (-got +want):\n%s", diff)
					}
					row, err := s.GetRecovery(ctx, f.tenantID, f.endpoint.ID, rec.ID)
					if err != nil {
						t.Fatal(err)
					}
					var atEvent string
					var nextSince time.Time
					if row.CappedAtEventID != nil {
						atEvent = *row.CappedAtEventID
					}
					if row.NextSince != nil {
						nextSince = row.NextSince.UTC()
					}
					if row.Capped != c.capped || atEvent != c.atEvent || !nextSince.Equal(c.nextSince) {
						t.Errorf("recovery capped %v at %q, next since %v; want %v at %q, %v", row.Capped, atEvent, nextSince, c.capped, c.atEvent, c.nextSince)
					}
				})
			}

			// A page asked for with the cap already reached (it never is:
			// the page that reaches it ends the recovery) still ends it.
			rec, err := s.CreateRecovery(ctx, f.endpoint, since, time.Now().UTC(), time.Now().UTC(), func(n int) string { return fmt.Sprint("rcv-wf-", n) })
			if err != nil {
				t.Fatal(err)
			}
			r := NewRecoverer(s, &fakeReplays{started: map[string]string{}}, 2, nil)
			for _, c := range []struct {
				after string
				want  RecoverPageOutput
			}{
				{events[4].ID, RecoverPageOutput{Done: true}},
				{events[1].ID, RecoverPageOutput{Done: true, Capped: true}},
			} {
				out, err := r.RecoverPage(ctx, RecoverPageInput{
					RecoveryID: rec.ID, TenantID: f.tenantID, EndpointID: f.endpoint.ID, Since: rec.WindowSince, Until: rec.WindowUntil,
					AsOf: rec.WindowUntil, After: c.after, Limit: 2, MaxEvents: 3, Before: models.RecoveryProgress{Found: 4},
				})
				if err != nil || out != c.want {
					t.Errorf("page after %s past the cap: %+v, %v; want %+v", c.after, out, err, c.want)
				}
			}
		})
	}
}
