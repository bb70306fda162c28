package main

import (
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The series the bench reads from the service's /metrics.
const (
	metricAttempts    = "recordhub_webhook_attempts_total"
	metricStarts      = "recordhub_webhook_workflow_starts_total" // label result: started, already_started
	metricPending     = "recordhub_outbox_pending_events"
	metricLag         = "recordhub_outbox_lag_seconds"
	metricLogDropped  = "recordhub_access_log_dropped_total"
	metricLogQueueLen = "recordhub_access_log_queue_depth"
)

// series is one /metrics page, by metric name.
type series map[string]*dto.MetricFamily

// get returns the sample of name whose labels include every pair of
// labels (name, value, name, value...), or 0 when there is none. With no
// pairs it is the unlabelled sample, or the first.
func (m series) get(name string, labels ...string) float64 {
	mf := m[name]
	if mf == nil {
		return 0
	}
	for _, s := range mf.GetMetric() {
		if hasLabels(s, labels) {
			return value(s)
		}
	}
	return 0
}

// sum adds up every sample of name, whatever its labels.
func (m series) sum(name string) float64 {
	total := 0.0
	for _, s := range m[name].GetMetric() {
		total += value(s)
	}
	return total
}

func hasLabels(s *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// value is a counter's, gauge's or untyped sample's value.
func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Untyped != nil:
		return s.Untyped.GetValue()
	}
	return 0
}

// scrape reads the service's /metrics.
func (s *service) scrape(ctx context.Context) (series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url("/metrics"), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	return series(m), nil
}

// metric reads one sample from /metrics; it must exist.
func (s *service) metric(ctx context.Context, name string, labels ...string) (float64, error) {
	m, err := s.scrape(ctx)
	if err != nil {
		return 0, err
	}
	if _, ok := m[name]; !ok {
		return 0, fmt.Errorf("metric %s not found", name)
	}
	return m.get(name, labels...), nil
}

func scrapeAll(ctx context.Context, ws []*service) ([]series, error) {
	out := make([]series, len(ws))
	for i, w := range ws {
		var err error
		if out[i], err = w.scrape(ctx); err != nil {
			return nil, fmt.Errorf("worker %d: %w", i+1, err)
		}
	}
	return out, nil
}
