package activities

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// fakeSnapshots records the snapshot deliveries a resync page starts.
type fakeSnapshots struct {
	mu      sync.Mutex
	records []string
}

func (f *fakeSnapshots) StartSnapshot(_ context.Context, ev *models.Event, _ *models.WebhookEndpoint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, ev.RecordID)
	return nil
}

// TestResyncPageFilter: a resync sends only the records the endpoint's
// filter passes, as the dispatcher sends only their live events; the
// others are examined, neither sent nor covered.
func TestResyncPageFilter(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			s := storetest.Open(t, d)
			tenant, _, _, err := s.CreateTenant(ctx, "acme", 600)
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: ptr("orders"), Name: ptr("Orders"),
				Fields: &[]models.Field{{Name: "title", Type: models.TypeString}}})
			if err != nil {
				t.Fatal(err)
			}
			var keep []string
			for _, title := range []string{"keep", "drop", "keep"} {
				r, err := s.CreateRecord(ctx, m, map[string]any{"title": title}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if title == "keep" {
					keep = append(keep, r.ID)
				}
			}
			url, modules, filter := "https://hooks.example.com/", []string{m.ID}, map[string]any{"title": "keep"}
			ep, _, err := s.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{
				URL: &url, Events: &[]string{models.EventRecordSnapshot}, ModuleIDs: &modules, Filter: &filter,
			}, func(context.Context, string) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			rs, err := s.CreateResync(ctx, ep, time.Now(), func(n int) string { return fmt.Sprint("rsy-wf-", n) })
			if err != nil {
				t.Fatal(err)
			}
			snaps := &fakeSnapshots{}
			out, err := NewResyncer(s, snaps, 2, nil).ResyncPage(ctx, ResyncPageInput{
				ResyncID: rs.ID, TenantID: tenant.ID, EndpointID: ep.ID, Position: rs.Position, StartedAt: rs.StartedAt, Limit: 10,
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.Examined != 3 || out.Sent != 2 || out.Covered != 0 || !out.Done {
				t.Errorf("page %+v, want examined 3, sent 2, covered 0, done", out)
			}
			slices.Sort(keep)
			slices.Sort(snaps.records)
			if !slices.Equal(snaps.records, keep) {
				t.Errorf("snapshots of %v, want those of the matching records %v", snaps.records, keep)
			}
		})
	}
}
