package activities

import (
	"time"

	"go.temporal.io/sdk/temporal"
)

// The default delivery schedule: the only place its values are written.
const (
	// DefaultTimeout is the per-attempt timeout (RECORDHUB_WEBHOOK_TIMEOUT).
	DefaultTimeout = 30 * time.Second
	// DefaultRetryInitial is the delay before the second attempt
	// (RECORDHUB_WEBHOOK_RETRY_INITIAL).
	DefaultRetryInitial = 60 * time.Second
	// DefaultRetryMaxInterval caps the delay between two attempts
	// (RECORDHUB_WEBHOOK_RETRY_MAX_INTERVAL).
	DefaultRetryMaxInterval = 960 * time.Second
	// BackoffCoefficient multiplies each delay between attempts to give
	// the next. It is not configurable: every retry policy a delivery
	// sets has it, so a policy's delays and attempts are its schedule.
	BackoffCoefficient = 2.0
)

// Schedule is a delivery's retry schedule, the one type that both the
// delivery workflow and the attempt activity read it from. The service's
// configuration fills it once (RECORDHUB_WEBHOOK_*); the workflow carries
// it in its input, so that it reads no configuration, and builds its
// activities' retry policies from it; the activity finds it again in its
// retry policy, to place a receiver's Retry-After and to know whether it
// makes the delivery's last attempt. Its methods are pure functions, which
// the workflow may call: the same schedule gives the same delays on every
// replay.
//
// Its JSON names are in the input of running deliveries (DeliveryInput's
// "policy"): a renamed field keeps its tag.
type Schedule struct {
	// Initial is the delay before the second attempt; each next delay is
	// BackoffCoefficient times the previous one.
	Initial time.Duration `json:"initial"`
	// MaxInterval caps the delay between two attempts.
	MaxInterval time.Duration `json:"max_interval"`
	// AttemptTimeout bounds one attempt, from DNS to the response's first
	// 4 KiB.
	AttemptTimeout time.Duration `json:"attempt_timeout"`
	// Attempts is the delivery's attempts in all, the first included; 0
	// means none is known to be the last. The configuration leaves it 0,
	// since each endpoint sets its own (retry_max), and so do the inputs
	// of deliveries, which carry retry_max beside the schedule: the
	// workflow sets it from there.
	Attempts int `json:"attempts,omitempty"`
}

// DefaultSchedule returns the default schedule: 60 s doubling up to 960 s,
// 30 s per attempt.
func DefaultSchedule() Schedule {
	return Schedule{Initial: DefaultRetryInitial, MaxInterval: DefaultRetryMaxInterval, AttemptTimeout: DefaultTimeout}
}

// WithDefaults returns s with its zero delays and timeout set to the
// defaults, and a cap below the initial delay, which Temporal refuses,
// raised to the initial delay.
func (s Schedule) WithDefaults() Schedule {
	d := DefaultSchedule()
	if s.Initial <= 0 {
		s.Initial = d.Initial
	}
	if s.MaxInterval <= 0 {
		s.MaxInterval = d.MaxInterval
	}
	if s.MaxInterval < s.Initial {
		s.MaxInterval = s.Initial
	}
	if s.AttemptTimeout <= 0 {
		s.AttemptTimeout = d.AttemptTimeout
	}
	return s
}

// Delay is the delay after attempt n (from 1), as Temporal computes it:
// Initial, times BackoffCoefficient for each attempt after the first,
// capped at MaxInterval.
func (s Schedule) Delay(n int) time.Duration {
	d := s.Initial
	for i := 1; i < n && d < s.MaxInterval; i++ {
		d = time.Duration(float64(d) * BackoffCoefficient)
	}
	return min(d, s.MaxInterval)
}

// Last reports whether attempt n (from 1) is the delivery's last: no
// attempt may follow it. With Attempts 0, none is.
func (s Schedule) Last(n int) bool {
	return s.Attempts > 0 && n >= s.Attempts
}

// scheduleOf is the schedule a retry policy runs, counted from its
// activity's first attempt: its delays, and its attempts (0: unlimited).
// Its coefficient is BackoffCoefficient, in every policy a delivery sets.
// A nil policy gives the zero schedule: no attempt is known to be the last.
func scheduleOf(p *temporal.RetryPolicy) Schedule {
	if p == nil {
		return Schedule{}
	}
	return Schedule{Initial: p.InitialInterval, MaxInterval: max(p.MaximumInterval, p.InitialInterval), Attempts: int(p.MaximumAttempts)}
}
