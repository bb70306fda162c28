package models

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// EndpointStats summarises an endpoint's attempts over a window, overall
// and per hour (the console's chart).
type EndpointStats struct {
	Since, Until time.Time
	AttemptStats
	Buckets []BucketStats
}

// BucketStats is one UTC hour of EndpointStats, from Start.
type BucketStats struct {
	Start time.Time
	AttemptStats
}

// AttemptStats counts finished attempts: skipped rows (attempt 0) and
// attempts still in flight are not attempts yet. The latency percentiles
// are over the attempts that sent a request (a response, or a network
// error or timeout), nil when there were none; they are read from a
// histogram, so they are within LatencyRelativeError of the exact
// nearest-rank percentile.
type AttemptStats struct {
	Attempts  int
	Succeeded int
	P50MS     *float64
	P95MS     *float64
}

// SuccessRate is Succeeded/Attempts, nil without attempts.
func (a *AttemptStats) SuccessRate() *float64 {
	if a.Attempts == 0 {
		return nil
	}
	r := float64(a.Succeeded) / float64(a.Attempts)
	return &r
}

// StatsHours is the number of UTC hours endpoint stats span: the current
// hour, up to now, and the 23 before it.
const StatsHours = 24

// The latency histogram has fixed log-spaced buckets: bucket 0 holds
// latencies below latencyMinMS, bucket i >= 1 holds
// [latencyMinMS·g^(i-1), latencyMinMS·g^i) with g = latencyGrowth, and the
// last one everything above (10⁷ ms, far past any attempt's timeout). A
// percentile is reported as its bucket's geometric middle, so it is within
// sqrt(g)-1 (under 2 %) of the exact value.
const (
	latencyGrowth  = 1.04
	latencyMinMS   = 0.001
	latencyMaxMS   = 1e7
	latencyBuckets = 590 // 1 + ceil(log(latencyMaxMS/latencyMinMS)/log(g))
)

// LatencyRelativeError bounds the relative error of a reported percentile
// for latencies from 1 µs to 10⁷ ms.
var LatencyRelativeError = math.Sqrt(latencyGrowth) - 1

// latencyBucket is the histogram bucket of a latency.
func latencyBucket(ms float64) int {
	if !(ms >= latencyMinMS) { // NaN too
		return 0
	}
	i := 1 + int(math.Floor(math.Log(ms/latencyMinMS)/math.Log(latencyGrowth)))
	return min(i, latencyBuckets-1)
}

// latencyValue is the latency a bucket stands for: its geometric middle.
func latencyValue(i int) float64 {
	if i <= 0 {
		return 0
	}
	return latencyMinMS * math.Pow(latencyGrowth, float64(i)-0.5)
}

// histogram is a sparse latency histogram: bucket → count.
type histogram map[int]int64

// parseHistogram reads the "bucket:count,…" text of a rollup row.
func parseHistogram(s string) (histogram, error) {
	h := histogram{}
	if s == "" {
		return h, nil
	}
	for _, pair := range strings.Split(s, ",") {
		b, n, ok := strings.Cut(pair, ":")
		i, err1 := strconv.Atoi(b)
		c, err2 := strconv.ParseInt(n, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("latency histogram: bad pair %q", pair)
		}
		h[i] += c
	}
	return h, nil
}

// String writes the histogram as sorted "bucket:count" pairs, leaving out
// empty buckets.
func (h histogram) String() string {
	keys := make([]int, 0, len(h))
	for k, n := range h {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(k))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(h[k], 10))
	}
	return b.String()
}

func (h histogram) add(o histogram) {
	for k, n := range o {
		h[k] += n
	}
}

// percentiles returns the nearest-rank p50 and p95 of the histogram, nil
// when it is empty.
func (h histogram) percentiles() (p50, p95 *float64) {
	var total int64
	keys := make([]int, 0, len(h))
	for k, n := range h {
		if n > 0 {
			total += n
			keys = append(keys, k)
		}
	}
	if total == 0 {
		return nil, nil
	}
	slices.Sort(keys)
	at := func(p float64) *float64 {
		rank := max(int64(math.Ceil(p*float64(total))), 1)
		var seen int64
		for _, k := range keys {
			if seen += h[k]; seen >= rank {
				v := latencyValue(k)
				return &v
			}
		}
		return nil
	}
	return at(0.50), at(0.95)
}

// requestErrors are the outcomes of an attempt whose request was sent, so
// whose duration is a latency.
var requestErrors = []string{"", DeliveryErrHTTPStatus, DeliveryErrTimeout, DeliveryErrConnectionRefused,
	DeliveryErrDNS, DeliveryErrTLS, DeliveryErrConnection}

// attemptState is what of a delivery row the rollups count.
type attemptState struct {
	TenantID   string
	EndpointID string
	StartedAt  time.Time
	Attempt    int
	Error      string
	Succeeded  bool
	DurationMS float64 `gorm:"column:duration_ms"`
}

func (d *WebhookDelivery) statsState() attemptState {
	return attemptState{TenantID: d.TenantID, EndpointID: d.EndpointID, StartedAt: d.StartedAt, Attempt: d.Attempt,
		Error: d.Error, Succeeded: d.Succeeded, DurationMS: d.DurationMS}
}

// counted: a finished attempt; skipped rows and rows in flight are not.
func (a attemptState) counted() bool { return a.Attempt > 0 && a.Error != DeliveryErrInFlight }

// statsKey is one rollup row.
type statsKey struct {
	TenantID, EndpointID string
	Hour                 int64
}

// statsDelta is a change to one rollup row.
type statsDelta struct {
	attempts, succeeded int64
	latencies           histogram
}

// statsDeltas gathers the changes of one write, by rollup row.
type statsDeltas map[statsKey]*statsDelta

// add adds sign times the attempt's contribution, if it counts.
func (ds statsDeltas) add(a attemptState, sign int64) {
	if !a.counted() {
		return
	}
	k := statsKey{a.TenantID, a.EndpointID, a.StartedAt.UTC().Truncate(time.Hour).Unix()}
	d := ds[k]
	if d == nil {
		d = &statsDelta{latencies: histogram{}}
		ds[k] = d
	}
	d.attempts += sign
	if a.Succeeded {
		d.succeeded += sign
	}
	if slices.Contains(requestErrors, a.Error) {
		d.latencies[latencyBucket(a.DurationMS)] += sign
	}
}

// change records that a row went from old to new: what old counted is
// taken back and what new counts added, so that finishing a row twice, or
// replacing worker_lost with a late outcome, counts each attempt once.
func (ds statsDeltas) change(old, new attemptState) {
	ds.add(old, -1)
	ds.add(new, 1)
}

// apply writes the deltas to the rollups in tx, the transaction that
// changed the rows. The counts are added by an upsert, which on PostgreSQL
// also locks the rollup row until commit and works on the row as the last
// writer committed it, so that concurrent writers of one endpoint and hour
// add up.
//
// The latency histogram is merged in that same upsert on PostgreSQL
// (mergeLatencies): one statement per rollup row, one round trip and one
// row version less while the row is locked, for about 70 µs more of the
// server's CPU per write with a histogram of 100 buckets (a scratch
// measurement of the two forms on one connection, 2026-11-24). On SQLite, where a statement is no round trip,
// the upsert returns the histogram and Go merges it and writes it back:
// the SQL merge took 25-40 % more of the one writer's time per attempt
// there (BenchmarkAttemptWrites).
func (ds statsDeltas) apply(tx *gorm.DB) error {
	merge := tx.Dialector.Name() == string(Postgres)
	for k, d := range ds {
		for b, n := range d.latencies {
			if n == 0 {
				delete(d.latencies, b)
			}
		}
		if d.attempts == 0 && d.succeeded == 0 && len(d.latencies) == 0 {
			continue
		}
		if merge {
			set := ""
			if len(d.latencies) > 0 {
				set = ", latencies = " + mergeLatencies("endpoint_stats_hours.latencies", "excluded.latencies")
			}
			err := tx.Exec(`INSERT INTO endpoint_stats_hours (tenant_id, endpoint_id, hour, attempts, succeeded, latencies)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (tenant_id, endpoint_id, hour) DO UPDATE SET
				attempts = endpoint_stats_hours.attempts + excluded.attempts,
				succeeded = endpoint_stats_hours.succeeded + excluded.succeeded`+set,
				k.TenantID, k.EndpointID, k.Hour, d.attempts, d.succeeded, d.latencies.String()).Error
			if err != nil {
				return fmt.Errorf("endpoint stats rollup: %w", err)
			}
			continue
		}
		var cur string
		err := tx.Raw(`INSERT INTO endpoint_stats_hours (tenant_id, endpoint_id, hour, attempts, succeeded, latencies)
			VALUES (?, ?, ?, ?, ?, '')
			ON CONFLICT (tenant_id, endpoint_id, hour) DO UPDATE SET
			attempts = endpoint_stats_hours.attempts + excluded.attempts,
			succeeded = endpoint_stats_hours.succeeded + excluded.succeeded
			RETURNING latencies`, k.TenantID, k.EndpointID, k.Hour, d.attempts, d.succeeded).Row().Scan(&cur)
		if err != nil {
			return fmt.Errorf("endpoint stats rollup: %w", err)
		}
		if len(d.latencies) == 0 {
			continue
		}
		h, err := parseHistogram(cur)
		if err != nil {
			return fmt.Errorf("endpoint stats rollup %s/%d: %w", k.EndpointID, k.Hour, err)
		}
		h.add(d.latencies)
		err = tx.Exec(`UPDATE endpoint_stats_hours SET latencies = ? WHERE tenant_id = ? AND endpoint_id = ? AND hour = ?`,
			h.String(), k.TenantID, k.EndpointID, k.Hour).Error
		if err != nil {
			return fmt.Errorf("endpoint stats rollup: %w", err)
		}
	}
	return nil
}

// mergeLatencies is a PostgreSQL expression that adds the histograms in
// the text expressions a and b ("bucket:count,…") and writes the sum as
// histogram.String does: sorted by bucket, empty buckets left out, ""
// when none is left. A pair that is not two integers fails the statement,
// as parseHistogram fails the Go merge.
func mergeLatencies(a, b string) string {
	return `(SELECT COALESCE(string_agg(k || ':' || n, ',' ORDER BY k), '') FROM (
		SELECT split_part(p, ':', 1)::int AS k, SUM(split_part(p, ':', 2)::bigint) AS n
		FROM unnest(string_to_array(` + a + ` || ',' || ` + b + `, ',')) AS p
		WHERE p <> '' GROUP BY 1) AS s WHERE n <> 0)`
}

// statsWindow returns the first hour of the stats of now: the hour
// StatsHours-1 before now's.
func statsWindow(now time.Time) time.Time {
	return now.UTC().Truncate(time.Hour).Add(-(StatsHours - 1) * time.Hour)
}

// EndpointStatsAt returns the stats of each of the tenant's endpoints in
// ids over the StatsHours UTC hours ending with now's: from the start of
// the hour 23 hours before now's until now, hour by hour. They are read
// from the hourly rollups, at most StatsHours rows per endpoint whatever
// the number of attempts; the counts are exact, and the current hour holds
// what has finished so far. Endpoints without attempts get empty stats.
func (s *Store) EndpointStatsAt(ctx context.Context, tenantID string, ids []string, now time.Time) (map[string]*EndpointStats, error) {
	now = now.UTC()
	since := statsWindow(now)
	out := make(map[string]*EndpointStats, len(ids))
	overall := make(map[string]histogram, len(ids))
	hours := make(map[string][]histogram, len(ids))
	for _, id := range ids {
		st := &EndpointStats{Since: since, Until: now, Buckets: make([]BucketStats, StatsHours)}
		for i := range st.Buckets {
			st.Buckets[i].Start = since.Add(time.Duration(i) * time.Hour)
		}
		out[id] = st
		overall[id], hours[id] = histogram{}, make([]histogram, StatsHours)
	}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		EndpointID          string
		Hour                int64
		Attempts, Succeeded int64
		Latencies           string
	}
	err := s.r.WithContext(ctx).Table("endpoint_stats_hours").
		Select("endpoint_id, hour, attempts, succeeded, latencies").
		Where("tenant_id = ? AND endpoint_id IN ? AND hour >= ? AND hour <= ?",
			tenantID, ids, since.Unix(), since.Add((StatsHours-1)*time.Hour).Unix()).
		Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("endpoint stats: %w", err)
	}
	for _, r := range rows {
		st := out[r.EndpointID]
		i := int((r.Hour - since.Unix()) / 3600)
		if st == nil || i < 0 || i >= StatsHours {
			continue
		}
		h, err := parseHistogram(r.Latencies)
		if err != nil {
			return nil, fmt.Errorf("endpoint stats %s: %w", r.EndpointID, err)
		}
		b := &st.Buckets[i]
		b.Attempts, b.Succeeded = int(r.Attempts), int(r.Succeeded)
		st.Attempts += b.Attempts
		st.Succeeded += b.Succeeded
		hours[r.EndpointID][i] = h
		overall[r.EndpointID].add(h)
	}
	for id, st := range out {
		st.P50MS, st.P95MS = overall[id].percentiles()
		for i, h := range hours[id] {
			st.Buckets[i].P50MS, st.Buckets[i].P95MS = h.percentiles()
		}
	}
	return out, nil
}

// backfillStats fills the rollups from the attempts already written, once
// after the migration that made them asks for it: it deletes the request
// first, in the same transaction, so that of two processes migrating at
// once only one fills them (the other's delete waits and finds nothing).
// Only the hours endpoint stats still show are filled (with one more, for
// an hour that turns while this runs); older ones are never read.
func (s *Store) backfillStats(ctx context.Context) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec("DELETE FROM endpoint_stats_backfill")
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		rows, err := tx.Model(&WebhookDelivery{}).
			Select("tenant_id, endpoint_id, started_at, attempt, error, succeeded, duration_ms").
			Where("started_at >= ? AND attempt > 0 AND error <> ?", statsWindow(s.now()).Add(-time.Hour), DeliveryErrInFlight).
			Rows()
		if err != nil {
			return err
		}
		defer rows.Close()
		ds := statsDeltas{}
		for rows.Next() {
			var a attemptState
			if err := tx.ScanRows(rows, &a); err != nil {
				return err
			}
			ds.add(a, 1)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		return ds.apply(tx)
	})
	if err != nil {
		return fmt.Errorf("backfill endpoint stats: %w", err)
	}
	return nil
}

// lockForUpdate locks the rows a query reads until the transaction ends,
// on PostgreSQL; SQLite's writes are serialised anyway.
func (s *Store) lockForUpdate(tx *gorm.DB) *gorm.DB {
	if s.dialect == Postgres {
		return tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
	}
	return tx
}
