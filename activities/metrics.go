package activities

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/models"
)

// Metrics counts delivery attempts. A nil *Metrics records nothing.
type Metrics struct {
	attempts *prometheus.CounterVec
	duration prometheus.Histogram
	// throttled counts attempts not made for want of the endpoint's
	// throttle slot; they are not attempts, and not in attempts.
	throttled prometheus.Counter
}

// outcomeSuccess is the outcome label of a 2xx; failures carry their
// delivery error code.
const outcomeSuccess = "success"

// NewMetrics returns the attempt metrics, registered with reg unless reg is
// nil: recordhub_webhook_attempts_total{outcome} and
// recordhub_webhook_attempt_duration_seconds.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "recordhub_webhook_attempts_total",
			Help: `Outbound webhook delivery attempts by outcome: "success" or the delivery error code.`,
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "recordhub_webhook_attempt_duration_seconds",
			Help:    "Duration of outbound webhook delivery attempts, failures included.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "recordhub_webhook_throttled_total",
			Help: "Delivery attempts put off because the endpoint's rate_limit or max_in_flight had no slot for them; each waits, then is made (not counted as attempts).",
		}),
	}
	// Known outcomes start at zero, so rates and alerts see them before the
	// first one happens.
	for _, o := range []string{
		outcomeSuccess, models.DeliveryErrTimeout, models.DeliveryErrConnectionRefused, models.DeliveryErrDNS,
		models.DeliveryErrTLS, models.DeliveryErrBlockedDestination, models.DeliveryErrHTTPStatus,
		models.DeliveryErrEndpointGone, models.DeliveryErrEndpointDisabled, models.DeliveryErrConnection,
		DeliveryErrEventGone, DeliveryErrCanceled, DeliveryErrInternal, models.DeliveryErrAuthFailed,
	} {
		m.attempts.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.attempts, m.duration, m.throttled)
	}
	return m
}

func (m *Metrics) observe(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(outcome).Inc()
	m.duration.Observe(d.Seconds())
}

func (m *Metrics) throttle() {
	if m != nil {
		m.throttled.Inc()
	}
}
