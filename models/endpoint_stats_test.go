package models_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// statsNow is the time the stats tests read at: the window is 2030-01-01
// 13:00 until now, hour by hour.
var statsNow = time.Date(2030, 1, 2, 12, 30, 0, 0, time.UTC)

// recount computes endpoint stats the direct way, from the delivery rows
// as they are: every finished attempt (attempt > 0, not in flight) started
// in [since, until) counts, the ones that sent a request (a response, or a
// network error or timeout) with their exact latency, percentiles by
// nearest rank.
type recounted struct {
	attempts, succeeded int
	latencies           []float64
}

func recount(rows []*models.WebhookDelivery, since, until time.Time) (overall recounted, hours [models.StatsHours]recounted) {
	sent := []string{"", models.DeliveryErrHTTPStatus, models.DeliveryErrTimeout, models.DeliveryErrConnectionRefused,
		models.DeliveryErrDNS, models.DeliveryErrTLS, models.DeliveryErrConnection}
	for _, r := range rows {
		if r.Attempt == 0 || r.InFlight() || r.StartedAt.Before(since) || !r.StartedAt.Before(until) {
			continue
		}
		i := int(r.StartedAt.Sub(since) / time.Hour)
		for _, c := range []*recounted{&overall, &hours[i]} {
			c.attempts++
			if r.Succeeded {
				c.succeeded++
			}
			if slices.Contains(sent, r.Error) {
				c.latencies = append(c.latencies, r.DurationMS)
			}
		}
	}
	return overall, hours
}

func nearestRank(values []float64, p float64) float64 {
	s := slices.Sorted(slices.Values(values))
	return s[max(int(math.Ceil(p*float64(len(s))))-1, 0)]
}

// compareStats checks got against the recount: counts exactly, percentiles
// within the histogram's stated relative error.
func compareStats(t *testing.T, what string, got models.AttemptStats, want recounted) {
	t.Helper()
	if got.Attempts != want.attempts || got.Succeeded != want.succeeded {
		t.Errorf("%s: %d attempts, %d succeeded; want %d, %d", what, got.Attempts, got.Succeeded, want.attempts, want.succeeded)
	}
	for _, pc := range []struct {
		name string
		got  *float64
		p    float64
	}{{"p50", got.P50MS, 0.50}, {"p95", got.P95MS, 0.95}} {
		if len(want.latencies) == 0 {
			if pc.got != nil {
				t.Errorf("%s: %s %v, want null", what, pc.name, *pc.got)
			}
			continue
		}
		exact := nearestRank(want.latencies, pc.p)
		if pc.got == nil || math.Abs(*pc.got-exact) > exact*models.LatencyRelativeError {
			t.Errorf("%s: %s %v, want %v within %.2f%%", what, pc.name, fmtPtr(pc.got), exact, 100*models.LatencyRelativeError)
		}
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// TestEndpointStatsMatchRecount: random attempts through every way a row
// is written and finished (finished at once, in flight then finished,
// finished twice, left in flight, lost to a dead worker and settled or
// marked by the next attempt, lost then finished late, skipped), over 27
// hours around the window: the rollups' stats equal a direct recount of
// the rows, counts exactly and percentiles within the stated error.
func TestEndpointStatsMatchRecount(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		s := storetest.Open(t, d)
		r := rand.New(rand.NewPCG(17, uint64(len(d))))
		endpoints := []string{"whe_a", "whe_b", "whe_c"}
		var ids []string
		for n := range 600 {
			ep, evt := endpoints[r.IntN(len(endpoints))], fmt.Sprintf("evt_%d", n)
			at := statsNow.Add(-26*time.Hour + time.Duration(r.Int64N(int64(27*time.Hour))))
			row := attemptRow("ten_1", ep, evt, 1+r.IntN(3), at)
			ids = append(ids, row.ID)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("attempt %d: %v", n, err)
				}
			}
			switch way := r.IntN(8); way {
			case 0: // finished when written (no request, or a row written whole)
				o := outcome(r, "", at)
				row.Error, row.Succeeded, row.DurationMS, row.ResponseStatus = o.Error, o.Succeeded, o.DurationMS, o.ResponseStatus
				must(s.InsertDelivery(ctx, row))
			case 1: // skipped: not an attempt
				row.Attempt, row.Error = 0, models.DeliveryErrEndpointDisabled
				must(s.InsertDelivery(ctx, row))
			case 2: // in flight for ever
				must(s.InsertAttempt(ctx, row))
			case 3, 4: // in flight, then finished; way 4 finishes twice
				must(s.InsertAttempt(ctx, row))
				o := outcome(r, row.ID, at)
				must(s.FinishAttempt(ctx, o))
				if way == 4 {
					must(s.FinishAttempt(ctx, o))
				}
			case 5, 6: // lost and settled; way 6's outcome arrives late
				must(s.InsertAttempt(ctx, row))
				_, err := s.SettleLostAttempts(ctx, evt, ep, row.WorkflowID, row.RunID, at)
				must(err)
				if way == 6 {
					must(s.FinishAttempt(ctx, outcome(r, row.ID, at)))
				}
			case 7: // lost, found so by the next attempt, which finishes
				row.Attempt = 1
				must(s.InsertAttempt(ctx, row))
				next := attemptRow("ten_1", ep, evt, 2, at.Add(time.Minute))
				must(s.InsertAttempt(ctx, next))
				must(s.FinishAttempt(ctx, outcome(r, next.ID, next.StartedAt)))
				ids = append(ids, next.ID)
			}
		}
		checkStats(t, s, "ten_1", endpoints, ids)

		// Another tenant's endpoint of the same id shares nothing.
		other, err := s.EndpointStatsAt(ctx, "ten_2", endpoints, statsNow)
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range endpoints {
			compareStats(t, "ten_2 "+ep, other[ep].AttemptStats, recounted{})
		}
	})
}

// TestEndpointStatsConcurrentFinishes: attempts of one endpoint and hour
// finished at once from many goroutines, each finish sent twice (a retried
// write), are each counted once.
func TestEndpointStatsConcurrentFinishes(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		s := storetest.Open(t, d)
		r := rand.New(rand.NewPCG(4, 2))
		at := statsNow.Add(-10 * time.Minute)
		var (
			ids      []string
			outcomes []*models.WebhookDelivery
		)
		for n := range 80 {
			row := attemptRow("ten_1", "whe_a", fmt.Sprintf("evt_%d", n), 1, at)
			if err := s.InsertAttempt(ctx, row); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, row.ID)
			outcomes = append(outcomes, outcome(r, row.ID, at))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2*len(outcomes))
		for _, o := range outcomes {
			for range 2 {
				wg.Go(func() {
					c := *o
					errs <- s.FinishAttempt(ctx, &c)
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("FinishAttempt: %v", err)
			}
		}
		checkStats(t, s, "ten_1", []string{"whe_a"}, ids)
	})
}

// TestEndpointStatsBackfill: attempts written before the rollups existed
// are counted by the backfill that migrating asks for, once: migrating
// again counts nothing twice.
func TestEndpointStatsBackfill(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		db := storetest.NewDB(t, d)
		s := db.Open(t, models.Options{Now: func() time.Time { return statsNow }})
		r := rand.New(rand.NewPCG(9, 9))
		var ids []string
		for n := range 200 {
			at := statsNow.Add(-25*time.Hour + time.Duration(r.Int64N(int64(26*time.Hour))))
			row := attemptRow("ten_1", "whe_a", fmt.Sprintf("evt_%d", n), 1, at)
			if n%10 != 0 { // a tenth left in flight
				o := outcome(r, "", at)
				row.Error, row.Succeeded, row.DurationMS, row.ResponseStatus = o.Error, o.Succeeded, o.DurationMS, o.ResponseStatus
			}
			if err := s.InsertDelivery(ctx, row); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, row.ID)
		}
		// As before the migration: rows, no rollups, the backfill asked for.
		h := db.SQL(t)
		for _, q := range []string{"DELETE FROM endpoint_stats_hours", "INSERT INTO endpoint_stats_backfill (pending) VALUES (1)"} {
			if _, err := h.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		empty, err := s.EndpointStatsAt(ctx, "ten_1", []string{"whe_a"}, statsNow)
		if err != nil {
			t.Fatal(err)
		}
		compareStats(t, "before the backfill", empty["whe_a"].AttemptStats, recounted{})
		for range 2 {
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			checkStats(t, s, "ten_1", []string{"whe_a"}, ids)
		}
	})
}

// TestPurgeEndpointStats: the deliveries' purge deletes the rollups of
// hours that ended before its cutoff, and keeps the others.
func TestPurgeEndpointStats(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		s := storetest.Open(t, d)
		hour := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
		for n, at := range []time.Time{hour.Add(-time.Minute), hour, hour.Add(59 * time.Minute), hour.Add(time.Hour)} {
			row := attemptRow("ten_1", "whe_a", fmt.Sprintf("evt_%d", n), 1, at)
			row.Error, row.Succeeded = "", true
			if err := s.InsertDelivery(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		// The 09:00 rows' hour has ended before the cutoff, the 10:00 one's
		// has not: its rollup stays while its rows go.
		if _, err := s.Purge(ctx, models.PurgeDeliveries, hour.Add(30*time.Minute), 100); err != nil {
			t.Fatalf("purge: %v", err)
		}
		st, err := s.EndpointStatsAt(ctx, "ten_1", []string{"whe_a"}, hour.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		got := []int{}
		for _, b := range st["whe_a"].Buckets[models.StatsHours-3:] {
			got = append(got, b.Attempts)
		}
		if want := []int{0, 2, 1}; !slices.Equal(got, want) {
			t.Errorf("attempts of 09:00, 10:00, 11:00 after the purge: %v, want %v", got, want)
		}
	})
}

// TestMergeLatenciesInSQL: PostgreSQL adds two histograms as Go does
// (histogram.String of their sum): random histograms, negative counts (a
// finish taken back), buckets that cancel out, and empty ones.
func TestMergeLatenciesInSQL(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t, models.Postgres)
	h := db.SQL(t)
	r := rand.New(rand.NewPCG(9, 1))
	random := func() string {
		var pairs []string
		for b := range 590 {
			if r.IntN(40) == 0 {
				pairs = append(pairs, fmt.Sprintf("%d:%d", b, r.Int64N(2_000_000_000_000)-10))
			}
		}
		return strings.Join(pairs, ",")
	}
	cases := [][2]string{{"", ""}, {"", "3:1"}, {"3:1", ""}, {"3:1", "3:-1"}, {"2:1,10:4", "9:1,10:-4,589:7"}, {"1:5", "1:5"}}
	for range 200 {
		cases = append(cases, [2]string{random(), random()})
	}
	for _, c := range cases {
		want, err := models.AddHistograms(c[0], c[1])
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := h.QueryRowContext(t.Context(), models.MergeLatenciesSQL(), c[0], c[1]).Scan(&got); err != nil {
			t.Fatalf("merge %q and %q: %v", c[0], c[1], err)
		}
		if got != want {
			t.Errorf("merge %q and %q = %q, want %q", c[0], c[1], got, want)
		}
	}
}
