package activities

import (
	"net/http"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestAttemptSupersededSnapshot: a record_snapshot to an endpoint whose
// ordering is "record", whose record had a live event committed after the
// resync's position, is not sent: one row, attempt 0, error superseded,
// counted as succeeded, and the attempt succeeds. To an unordered endpoint
// it is sent as before.
func TestAttemptSupersededSnapshot(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			ctx := t.Context()
			recv := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
			f := newFixture(t, storetest.Open(t, dialect), recv.URL+"/hooks")
			s := f.store
			ep, err := s.UpdateEndpoint(ctx, f.tenantID, f.endpoint.ID, models.EndpointInput{
				Events:   &[]string{models.EventRecordSnapshot, models.EventRecordCreated, models.EventRecordUpdated},
				Ordering: ptr(models.OrderingRecord),
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.MarkDispatched(ctx, []string{f.event.ID}); err != nil {
				t.Fatal(err)
			}
			rs, err := s.CreateResync(ctx, ep, time.Now(), func(n int) string { return "webhook-resync/x" })
			if err != nil {
				t.Fatal(err)
			}
			page, err := s.ResyncPage(ctx, models.ResyncPageQuery{Endpoint: ep, Position: rs.Position, Limit: 10})
			if err != nil || len(page) != 1 || page[0].Covered {
				t.Fatalf("resync page %+v, %v: want the record, not covered", page, err)
			}
			snap, err := models.SnapshotEvent(rs, &page[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SaveSnapshots(ctx, []models.Event{snap}); err != nil {
				t.Fatal(err)
			}
			// The live update that overtakes the snapshot.
			mod, err := s.GetModule(ctx, f.tenantID, page[0].Module.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.UpdateRecord(ctx, mod, f.event.RecordID, models.RecordPatch{Fields: map[string]any{"name": "Ada"}}, nil); err != nil {
				t.Fatal(err)
			}
			d := newDeliverer(t, s, Config{AllowCIDRs: loopback})
			in := AttemptInput{TenantID: f.tenantID, EventID: snap.ID, EndpointID: ep.ID}
			out, err := d.Attempt(ctx, in)
			if err != nil {
				t.Fatalf("Attempt: %v", err)
			}
			row := f.onlyRow(t)
			if out.Error != models.DeliveryErrSuperseded || row.Attempt != 0 || !row.Succeeded || row.Error != models.DeliveryErrSuperseded || row.RequestBody != "" {
				t.Errorf("output %+v, row %+v: want attempt 0, superseded, succeeded, nothing sent", out, row)
			}
			if n := len(recv.requests()); n != 0 {
				t.Errorf("the receiver got %d requests", n)
			}

			if _, err := s.UpdateEndpoint(ctx, f.tenantID, ep.ID, models.EndpointInput{Ordering: ptr(models.OrderingNone)}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Attempt(ctx, in); err != nil {
				t.Fatalf("Attempt to the unordered endpoint: %v", err)
			}
			if n := len(recv.requests()); n != 1 {
				t.Errorf("the receiver got %d requests from the unordered endpoint, want 1", n)
			}
		})
	}
}
