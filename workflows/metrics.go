package workflows

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the dispatcher's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	lag     prometheus.Gauge
	pending prometheus.Gauge
	starts  *prometheus.CounterVec
}

// Outcomes of a workflow start, the result label of the starts counter.
const (
	startStarted        = "started"
	startAlreadyStarted = "already_started"
	startFailed         = "failed"
)

// NewMetrics returns the dispatcher's metrics, registered with reg when it
// is not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "recordhub_outbox_lag_seconds",
			Help: "Age of the oldest event waiting for its webhook deliveries to be started (0: none waits).",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "recordhub_outbox_pending_events",
			Help: "Events waiting for their webhook deliveries to be started.",
		}),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recordhub_webhook_workflow_starts_total",
			Help: "Delivery workflow starts by the outbox dispatcher, by result: started, already_started (a repeated start, harmless), failed.",
		}, []string{"result"}),
	}
	for _, r := range []string{startStarted, startAlreadyStarted, startFailed} {
		m.starts.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.lag, m.pending, m.starts)
	}
	return m
}

func (m *Metrics) started(result string) {
	if m != nil {
		m.starts.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) backlog(n int64, age time.Duration) {
	if m != nil {
		m.pending.Set(float64(n))
		m.lag.Set(age.Seconds())
	}
}
