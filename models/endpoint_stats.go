package models

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// EndpointStats summarises an endpoint's attempts over a window, overall
// and per bucket (the console's chart).
type EndpointStats struct {
	Since, Until time.Time
	AttemptStats
	Buckets []BucketStats
}

// BucketStats is one bucket of EndpointStats, from Start for the window's
// bucket width.
type BucketStats struct {
	Start time.Time
	AttemptStats
}

// AttemptStats counts finished attempts: skipped rows (attempt 0) and
// attempts still in flight are not attempts yet. The latency percentiles
// are over the attempts that sent a request (a response, or a network
// error or timeout), nil when there were none.
type AttemptStats struct {
	Attempts  int
	Succeeded int
	P50MS     *float64
	P95MS     *float64

	durations []float64
}

// SuccessRate is Succeeded/Attempts, nil without attempts.
func (a *AttemptStats) SuccessRate() *float64 {
	if a.Attempts == 0 {
		return nil
	}
	r := float64(a.Succeeded) / float64(a.Attempts)
	return &r
}

// requestErrors are the outcomes of an attempt whose request was sent, so
// whose duration is a latency.
var requestErrors = []string{"", DeliveryErrHTTPStatus, DeliveryErrTimeout, DeliveryErrConnectionRefused,
	DeliveryErrDNS, DeliveryErrTLS, DeliveryErrConnection}

func (a *AttemptStats) add(succeeded bool, errCode string, durationMS float64) {
	a.Attempts++
	if succeeded {
		a.Succeeded++
	}
	if slices.Contains(requestErrors, errCode) {
		a.durations = append(a.durations, durationMS)
	}
}

func (a *AttemptStats) finish() {
	if len(a.durations) == 0 {
		return
	}
	slices.Sort(a.durations)
	a.P50MS, a.P95MS = percentile(a.durations, 0.50), percentile(a.durations, 0.95)
	a.durations = nil
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) *float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	v := sorted[max(i, 0)]
	return &v
}

// EndpointStatsSince returns the stats of each of the tenant's endpoints
// in ids over [since, until), in buckets of width (the last one may be
// cut short by until). Endpoints without attempts get empty stats. The
// window's attempts are read once, through the (tenant, started_at) index;
// the console asks for 24 hours of a page of endpoints.
func (s *Store) EndpointStatsSince(ctx context.Context, tenantID string, ids []string, since, until time.Time, width time.Duration) (map[string]*EndpointStats, error) {
	if width <= 0 || !since.Before(until) {
		return nil, fmt.Errorf("endpoint stats: empty window %s..%s or bucket %s", since, until, width)
	}
	since, until = since.UTC(), until.UTC()
	n := int((until.Sub(since) + width - 1) / width)
	out := make(map[string]*EndpointStats, len(ids))
	for _, id := range ids {
		st := &EndpointStats{Since: since, Until: until, Buckets: make([]BucketStats, n)}
		for i := range st.Buckets {
			st.Buckets[i].Start = since.Add(time.Duration(i) * width)
		}
		out[id] = st
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.r.WithContext(ctx).Model(&WebhookDelivery{}).
		Select("endpoint_id, started_at, succeeded, error, duration_ms").
		Where("tenant_id = ? AND started_at >= ? AND started_at < ? AND endpoint_id IN ? AND attempt > 0 AND error <> ?",
			tenantID, since, until, ids, DeliveryErrInFlight).
		Rows()
	if err != nil {
		return nil, fmt.Errorf("endpoint stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r struct {
			EndpointID string
			StartedAt  time.Time
			Succeeded  bool
			Error      string
			DurationMS float64 `gorm:"column:duration_ms"`
		}
		if err := s.r.ScanRows(rows, &r); err != nil {
			return nil, fmt.Errorf("endpoint stats: %w", err)
		}
		st := out[r.EndpointID]
		i := int(r.StartedAt.Sub(since) / width)
		if st == nil || i < 0 || i >= n {
			continue
		}
		st.add(r.Succeeded, r.Error, r.DurationMS)
		st.Buckets[i].add(r.Succeeded, r.Error, r.DurationMS)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("endpoint stats: %w", err)
	}
	for _, st := range out {
		st.finish()
		for i := range st.Buckets {
			st.Buckets[i].finish()
		}
	}
	return out, nil
}
