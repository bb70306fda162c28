package models_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestPurge: a purge removes only rows older than the cutoff, in batches,
// keeps pending outbox events whatever their age, lets concurrent writes
// go on, and leaves the hourly and daily usage figures as they were.
func TestPurge(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		db := storetest.NewDB(t, d)
		clock := storetest.NewClock()
		s := db.Open(t, models.Options{Now: clock.Now})
		out := newOutboxTenant(t, s, "t")
		k, _ := createKey(t, s, out.id, models.KeyInput{})

		old := clock.Now().UTC().Truncate(time.Second)
		const oldRows, newRows = 25, 5
		fresh := old.Add(10 * 24 * time.Hour)
		cutoff := old.Add(5 * 24 * time.Hour)

		// Old rows: spread over two days of hours, so that usage has
		// several hourly and daily buckets.
		at := func(i int, base time.Time) time.Time { return base.Add(time.Duration(i) * 2 * time.Hour) }
		var logs []models.AccessLog
		for i := range oldRows + newRows {
			base := old
			if i >= oldRows {
				base = fresh
			}
			logs = append(logs, models.AccessLog{
				ID: models.NewID(models.PrefixAccessLog), TenantID: &out.id, KeyID: &k.ID, Method: "GET", Path: "/api/modules",
				Route: "/api/modules", Status: []int{200, 404, 429}[i%3], RequestID: "r", CreatedAt: at(i%oldRows, base),
			})
		}
		if err := s.InsertAccessLogs(ctx, logs); err != nil {
			t.Fatal(err)
		}
		for i := range oldRows + newRows {
			base := old
			if i >= oldRows {
				base = fresh
			}
			d := &models.WebhookDelivery{
				TenantID: out.id, EventID: fmt.Sprintf("evt_%d", i), EventType: models.EventRecordCreated, EndpointID: "whe_1",
				WorkflowID: "wf", RunID: "run", Attempt: 1, RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{},
				RequestBody: "{}", ResponseHeaders: models.Headers{}, StartedAt: at(i%oldRows, base), FinishedAt: at(i%oldRows, base),
			}
			if err := s.InsertDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
			ev := &models.InboundEvent{
				ID: models.NewID(models.PrefixInboundEvent), TenantID: out.id, ModuleID: out.module.ID, WebhookID: "whi_1", RequestID: "r", Status: 202,
				ReceivedAt: at(i%oldRows, base),
			}
			if err := s.RecordInboundEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		// Outbox: old dispatched events go, an old pending one stays
		// whatever its age, a newly dispatched one stays.
		oldEvents := out.events(t, s, 3)
		if err := s.MarkDispatched(ctx, oldEvents[:2]); err != nil {
			t.Fatal(err)
		}
		saveAnswers := func(n int) {
			t.Helper()
			for range n {
				a := models.IdempotentAnswer{Fingerprint: []byte("f"), Status: 201, Body: []byte("{}")}
				if err := s.SaveIdempotentAnswer(ctx, k.ID, models.NewID("idem"), 24*time.Hour, a); err != nil {
					t.Fatal(err)
				}
			}
		}
		saveAnswers(oldRows)
		clock.Advance(10 * 24 * time.Hour)
		saveAnswers(newRows)
		newEvents := out.events(t, s, 1)
		if err := s.MarkDispatched(ctx, newEvents); err != nil {
			t.Fatal(err)
		}

		usage := func() [][]models.UsageBucket {
			t.Helper()
			var got [][]models.UsageBucket
			for _, byDay := range []bool{false, true} {
				b, err := s.KeyUsageBuckets(ctx, out.id, k.ID, byDay, old.Add(-48*time.Hour), fresh.Add(30*24*time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, utcBuckets(b))
			}
			return got
		}
		usageBefore := usage()
		if len(usageBefore[0]) < 2*oldRows/3 || len(usageBefore[1]) < 3 {
			t.Fatalf("usage before the purge %v: want several buckets", usageBefore)
		}

		// Writes go on during the purge.
		stopWriting, writing := make(chan struct{}), make(chan struct{})
		var (
			wg       sync.WaitGroup
			written  int
			writeErr error
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopWriting:
					return
				default:
				}
				l := models.AccessLog{ID: models.NewID(models.PrefixAccessLog), Method: "GET", Path: "/healthz", Route: "/healthz",
					Status: 200, RequestID: "w", CreatedAt: clock.Now()}
				if err := s.InsertAccessLogs(ctx, []models.AccessLog{l}); err != nil {
					writeErr = err
					return
				}
				if written++; written == 1 {
					close(writing)
				}
			}
		}()
		select {
		case <-writing:
		case <-time.After(10 * time.Second):
			t.Fatal("the concurrent writer did not start")
		}

		const batch = 10
		for _, kind := range models.PurgeKinds {
			var batches []int64
			for {
				n, err := s.Purge(ctx, kind, cutoff, batch)
				if err != nil {
					t.Fatalf("purge %s: %v", kind, err)
				}
				batches = append(batches, n)
				if n < batch {
					break
				}
			}
			want := []int64{10, 10, 5}
			if kind == models.PurgeEvents {
				want = []int64{2}
			}
			if diff := cmp.Diff(want, batches); diff != "" {
				t.Errorf("%s batches (-want +got):\n%s", kind, diff)
			}
		}
		close(stopWriting)
		wg.Wait()
		if writeErr != nil {
			t.Fatalf("a write during the purge failed: %v", writeErr)
		}

		count := func(query string, args ...any) int {
			t.Helper()
			var n int
			if err := db.SQL(t).QueryRow(query, args...).Scan(&n); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			return n
		}
		if got := count("SELECT COUNT(*) FROM access_logs WHERE key_id IS NOT NULL"); got != newRows {
			t.Errorf("%d keyed access logs left, want the %d new ones", got, newRows)
		}
		if got := count("SELECT COUNT(*) FROM access_logs WHERE key_id IS NULL"); got != written {
			t.Errorf("%d access logs written during the purge are left, want %d", got, written)
		}
		if got := count("SELECT COUNT(*) FROM webhook_deliveries"); got != newRows {
			t.Errorf("%d deliveries left, want %d", got, newRows)
		}
		if got := count("SELECT COUNT(*) FROM inbound_events"); got != newRows {
			t.Errorf("%d inbound events left, want %d", got, newRows)
		}
		if got := count("SELECT COUNT(*) FROM idempotency_keys"); got != newRows {
			t.Errorf("%d idempotent answers left, want %d", got, newRows)
		}
		var left []string
		rows, err := db.SQL(t).Query("SELECT id FROM events ORDER BY occurred_at, id")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			left = append(left, id)
		}
		rows.Close()
		if want := []string{oldEvents[2], newEvents[0]}; !sameSet(left, want) {
			t.Errorf("events left %v, want the pending %s and the new %s", left, oldEvents[2], newEvents[0])
		}
		if diff := cmp.Diff(usageBefore, usage()); diff != "" {
			t.Errorf("usage changed by the purge (-before +after):\n%s", diff)
		}

		// Nothing older is left: another pass deletes nothing.
		for _, kind := range models.PurgeKinds {
			if n, err := s.Purge(ctx, kind, cutoff, batch); err != nil || n != 0 {
				t.Errorf("second purge of %s: %d, %v", kind, n, err)
			}
		}
		if _, err := s.Purge(ctx, "records", cutoff, batch); err == nil {
			t.Error("purge of an unknown kind: no error")
		}
	})
}
