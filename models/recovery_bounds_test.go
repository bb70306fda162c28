package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// TestCreateRecoveryOneRunning: of ten recoveries of one endpoint asked for
// at once, exactly one is recorded and the nine others are refused as a
// conflict naming it, without using up a number; another endpoint is not
// held back; once the running one ended, the next one takes number 2.
func TestCreateRecoveryOneRunning(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		f := newRecoveryFixture(t, d)
		wf := func(ep *models.WebhookEndpoint) func(int) string {
			return func(n int) string { return fmt.Sprintf("webhook-recovery/%s/%d", ep.ID, n) }
		}
		const callers = 10
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			created []*models.WebhookRecovery
			refused []*models.RecoveryRunningError
			others  []error
		)
		for range callers {
			wg.Go(func() {
				r, err := f.s.CreateRecovery(ctx, f.ep, rcvSince, rcvUntil, rcvAsOf, wf(f.ep))
				mu.Lock()
				defer mu.Unlock()
				running, isRunning := errors.AsType[*models.RecoveryRunningError](err)
				switch {
				case err == nil:
					created = append(created, r)
				case isRunning:
					refused = append(refused, running)
				default:
					others = append(others, err)
				}
			})
		}
		wg.Wait()
		if len(created) != 1 || len(refused) != callers-1 || len(others) != 0 {
			t.Fatalf("%d created, %d refused as running, other errors %v; want 1, %d, none", len(created), len(refused), others, callers-1)
		}
		winner := created[0]
		if winner.N != 1 {
			t.Errorf("the recovery recorded is number %d, want 1", winner.N)
		}
		for _, r := range refused {
			if r.Running.ID != winner.ID || r.Running.WorkflowID != winner.WorkflowID || models.ErrorKind(r) != models.KindConflict {
				t.Errorf("refusal names %s (%s), kind %s; want %s (%s), conflict", r.Running.ID, r.Running.WorkflowID, models.ErrorKind(r), winner.ID, winner.WorkflowID)
			}
		}
		if r, err := f.s.CreateRecovery(ctx, f.ep2, rcvSince, rcvUntil, rcvAsOf, wf(f.ep2)); err != nil || r.N != 1 {
			t.Errorf("another endpoint's recovery while the first runs: %+v, %v; want number 1", r, err)
		}

		if err := f.s.FinishRecovery(ctx, winner.ID, models.RecoveryCompleted, models.RecoveryProgress{}, "", rcvAsOf); err != nil {
			t.Fatal(err)
		}
		next, err := f.s.CreateRecovery(ctx, f.ep, rcvSince, rcvUntil, rcvAsOf, wf(f.ep))
		if err != nil {
			t.Fatalf("recovery after the first ended: %v", err)
		}
		if got, want := next.WorkflowID, wf(f.ep)(2); got != want {
			t.Errorf("next recovery %s, want %s: the refusals used no number", got, want)
		}
	})
}

// TestReserveRecoveryReplaysConcurrently: the same page reserved by several
// workers at once (a page retried while its first attempt still runs),
// while manual replays of the same events are numbered beside it, gives
// every worker the same workflow id per event, one reservation per event
// for the recovery, and no number twice.
func TestReserveRecoveryReplaysConcurrently(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		f := newRecoveryFixture(t, d)
		evs := f.events(t, f.tenant, 5)
		wf := func(eventID string, n int) string { return fmt.Sprintf("webhook-replay/%s/%s/%d", eventID, f.ep.ID, n) }
		r, err := f.s.CreateRecovery(ctx, f.ep, rcvSince, rcvUntil, rcvAsOf, func(n int) string { return fmt.Sprint("wf-", n) })
		if err != nil {
			t.Fatal(err)
		}
		// A conflict is the caller's cue to try again (Temporal retries
		// the page); the tries are bounded so that a livelock fails.
		retry := func(fn func() error) error {
			var err error
			for range 50 {
				if err = fn(); models.ErrorKind(err) != models.KindConflict {
					return err
				}
			}
			return err
		}
		const workers, manuals = 6, 4
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			got  []map[string]string
			errs []error
		)
		for range workers {
			wg.Go(func() {
				var ids map[string]string
				err := retry(func() (err error) {
					ids, err = f.s.ReserveRecoveryReplays(ctx, r.ID, f.ep.ID, evs, wf)
					return err
				})
				mu.Lock()
				defer mu.Unlock()
				got, errs = append(got, ids), append(errs, err)
			})
		}
		for i := range manuals {
			wg.Go(func() {
				err := retry(func() error {
					_, _, err := f.s.NextReplay(ctx, evs[i%2], f.ep.ID, func(n int) string { return wf(evs[i%2], n) })
					return err
				})
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, err)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for i, ids := range got[1:] {
			if diff := cmp.Diff(ids, got[0]); diff != "" {
				t.Errorf("worker %d's workflow ids differ from worker 0's (-got +want):\n%s", i+1, diff)
			}
		}
		mine := map[string]string{}
		seen := map[string]bool{}
		for _, row := range replayRows(t, f.db) {
			if seen[row.WorkflowID] {
				t.Errorf("workflow id %s reserved twice", row.WorkflowID)
			}
			seen[row.WorkflowID] = true
			if row.RecoveryID != r.ID {
				continue
			}
			if _, twice := mine[row.EventID]; twice {
				t.Errorf("event %s reserved twice for the recovery", row.EventID)
			}
			mine[row.EventID] = row.WorkflowID
		}
		if diff := cmp.Diff(mine, got[0]); diff != "" {
			t.Errorf("the recovery's rows (-got) against the ids the workers got (+want):\n%s", diff)
		}
		if len(mine) != len(evs) || len(seen) != len(evs)+manuals {
			t.Errorf("%d events reserved for the recovery among %d rows, want %d among %d", len(mine), len(seen), len(evs), len(evs)+manuals)
		}
	})
}

// TestPurgeNumberingRows: retention deletes the replay numbers of purged
// events and finished recoveries older than the cutoff, and keeps the
// replay numbers of stored events and running or recent recoveries; the
// numbers given afterwards are never ones given before.
func TestPurgeNumberingRows(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		f := newRecoveryFixture(t, d)
		evs := f.events(t, f.tenant, 2)
		gone, kept := evs[0], evs[1]
		wf := func(eventID string, n int) string { return fmt.Sprintf("webhook-replay/%s/%s/%d", eventID, f.ep.ID, n) }
		rwf := func(ep *models.WebhookEndpoint) func(int) string {
			return func(n int) string { return fmt.Sprintf("webhook-recovery/%s/%d", ep.ID, n) }
		}
		manual := func(eventID string) int {
			t.Helper()
			n, _, err := f.s.NextReplay(ctx, eventID, f.ep.ID, func(n int) string { return wf(eventID, n) })
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		create := func(ep *models.WebhookEndpoint) *models.WebhookRecovery {
			t.Helper()
			r, err := f.s.CreateRecovery(ctx, ep, rcvSince, rcvUntil, f.clock.Now(), rwf(ep))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		finish := func(r *models.WebhookRecovery) {
			t.Helper()
			if err := f.s.FinishRecovery(ctx, r.ID, models.RecoveryCompleted, models.RecoveryProgress{}, "", f.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}

		// Long ago: replays of both events, a recovery of each endpoint
		// (the first finished, the second still running), and the first
		// event dispatched.
		manual(gone)
		manual(kept)
		old := create(f.ep)
		if _, err := f.s.ReserveRecoveryReplays(ctx, old.ID, f.ep.ID, []string{gone, kept}, wf); err != nil {
			t.Fatal(err)
		}
		finish(old)
		running := create(f.ep2)
		if err := f.s.MarkDispatched(ctx, []string{gone}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Hour)
		recent := create(f.ep)
		finish(recent)
		cutoff := f.clock.Now().Add(-time.Hour)

		if n, err := f.s.Purge(ctx, models.PurgeEvents, cutoff, 100); err != nil || n != 3 {
			t.Errorf("purge of events: %d, %v; want 3 (the event and its two replay numbers)", n, err)
		}
		if n, err := f.s.Purge(ctx, models.PurgeDeliveries, cutoff, 100); err != nil || n != 1 {
			t.Errorf("purge of deliveries: %d, %v; want 1 (the old finished recovery)", n, err)
		}
		want := []replayRow{{kept, f.ep.ID, 1, wf(kept, 1), ""}, {kept, f.ep.ID, 2, wf(kept, 2), old.ID}}
		if diff := cmp.Diff(replayRows(t, f.db), sortedReplayRows(want)); diff != "" {
			t.Errorf("webhook_replays after the purge (-got +want):\n%s", diff)
		}
		for _, c := range []struct {
			r    *models.WebhookRecovery
			want error
		}{{old, models.ErrNotFound}, {running, nil}, {recent, nil}} {
			if _, err := f.s.GetRecovery(ctx, f.tenant.id, c.r.EndpointID, c.r.ID); !errors.Is(err, c.want) {
				t.Errorf("recovery %d of %s after the purge: %v, want %v", c.r.N, c.r.EndpointID, err, c.want)
			}
		}

		// The numbers given next are new ones.
		if n := manual(kept); n != 3 {
			t.Errorf("next replay of the stored event: %d, want 3", n)
		}
		if r := create(f.ep); r.N != 3 || r.WorkflowID != rwf(f.ep)(3) {
			t.Errorf("next recovery of the endpoint: %d (%s), want 3: numbers 1 and 2 were given", r.N, r.WorkflowID)
		}
	})
}
