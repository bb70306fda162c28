package api

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/models"
)

type metrics struct {
	requests      *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	rateLimited   prometheus.Counter
	limiterErrors prometheus.Counter
	inbound       *prometheus.CounterVec
	// streamsCut counts change streams cut off because a write to the
	// reader blocked past the write timeout.
	streamsCut prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recordhub_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "recordhub_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "recordhub_rate_limited_total", Help: "Requests answered 429 by the per-key limit.",
		}),
		limiterErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "recordhub_rate_limiter_errors_total", Help: "Requests let through because the rate limiter failed.",
		}),
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recordhub_inbound_calls_total", Help: "Calls to inbound webhooks by outcome: created, updated or an error code.",
		}, []string{"outcome"}),
	}
	m.streamsCut = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "recordhub_change_streams_cut_total", Help: "Change streams cut off because their reader did not take what was written within the write timeout.",
	})
	reg.MustRegister(m.requests, m.latency, m.rateLimited, m.limiterErrors, m.inbound, m.streamsCut)
	return m
}

// observe counts one request. route is the matched route pattern, or one
// shared value for every unmatched path; method is the request's own, which
// any caller may invent, so it is reduced to a fixed set by methodLabel.
func (m *metrics) observe(method, route string, status int, elapsed time.Duration) {
	method = methodLabel(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(elapsed.Seconds())
}

// methodLabel returns method when it is one of the standard HTTP methods
// (RFC 9110 and PATCH), else "other", so that invented methods cannot make
// new series.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// endpointHealthCollector reports recordhub_webhook_endpoints{state}, the
// endpoints of all tenants by health state, counted when scraped: one
// GROUP BY on a small table, bounded by a short timeout so that a slow
// database cannot hold the scrape.
type endpointHealthCollector struct {
	store *models.Store
	log   *slog.Logger
	desc  *prometheus.Desc
}

func newEndpointHealthCollector(store *models.Store, log *slog.Logger) *endpointHealthCollector {
	return &endpointHealthCollector{store: store, log: log, desc: prometheus.NewDesc(
		"recordhub_webhook_endpoints", "Webhook endpoints by health state: healthy, failing or disabled.", []string{"state"}, nil,
	)}
}

func (c *endpointHealthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *endpointHealthCollector) Collect(ch chan<- prometheus.Metric) {
	// Collect has no context of its own; the scrape's is not passed down.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.store.CountEndpointsByHealth(ctx)
	if err != nil {
		// No series rather than a failed scrape: the other metrics still count.
		c.log.Warn("count endpoints by health", "error", err)
		return
	}
	for _, state := range []string{models.HealthHealthy, models.HealthFailing, models.HealthDisabled} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[state]), state)
	}
}
