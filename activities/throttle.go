package activities

import (
	"context"
	"net/http/httptrace"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/activities/throttle"
	"github.com/recordhub/recordhub/models"
)

// Throttle holds endpoints' throttles (throttle.Memory within one
// process, throttle.Redis across processes).
type Throttle interface {
	Acquire(ctx context.Context, r throttle.Request) (throttle.Grant, error)
}

// ErrTypeThrottled: the attempt was not made, because its endpoint's
// throttle (rate_limit, max_in_flight) has no slot for it now; nothing was
// sent, no row written, and the attempt's number is not used. The error's
// next-retry delay is the wait the throttle placed it at, its details the
// AttemptOutput of the attempt not made. Not retryable: the workflow waits
// on a timer of its own, which frees the worker meanwhile and shows in the
// Temporal UI as a wait, then makes the same attempt again.
const ErrTypeThrottled = "AttemptThrottled"

// leaseMargin is added to the attempt timeout for a slot in flight's
// lease: a slot whose worker died comes back after that.
const leaseMargin = 15 * time.Second

// shortWait is the longest refusal an activity waits out itself, up to
// shortWaits times, instead of answering ErrTypeThrottled for the
// workflow's timer (a timer and a new activity cost more history than a
// few milliseconds' wait is worth). A local attempt never waits: it holds a
// workflow task. (Waits of up to a hundred requests' time, tried to keep a
// delivery's turn, raised the drain rate but let a receiver count more
// than the limit in one second: kept short until that is understood.)
func shortWait(models.Throttle) time.Duration { return 50 * time.Millisecond }

const shortWaits = 3

// stampOnWrite stamps the permit's slot with the time the request was
// written (see throttle.Permit.Sending): counted from then, not from when
// the slot was taken, the second's window cannot be bunched up by the row's
// write or the connection's set-up in between.
func (d *Deliverer) stampOnWrite(ctx context.Context, in AttemptInput, permit *throttle.Permit) context.Context {
	if permit == nil {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		if err := permit.Sending(); err != nil {
			d.log.WarnContext(ctx, "throttle: stamp the send time", "endpoint_id", in.EndpointID, "error", err)
		}
	}})
}

// acquire takes the endpoint's slot for the attempt info describes. A nil
// permit and a nil error mean the attempt is throttled: err is then the
// ErrTypeThrottled error to return.
func (d *Deliverer) acquire(ctx context.Context, in AttemptInput, info activityInfo, t models.Throttle) (*throttle.Permit, error) {
	waiter := info.workflowID
	if waiter == "" {
		waiter = in.EventID
	}
	r := throttle.Request{
		Key: in.EndpointID, Waiter: waiter, Queued: in.Throttled,
		Limits: throttle.Limits{PerSecond: t.PerSecond, MaxInFlight: t.MaxInFlight},
		Lease:  d.schedule.AttemptTimeout + leaseMargin,
	}
	for try := 0; ; try++ {
		g, err := d.throttle.Acquire(ctx, r)
		if err != nil {
			return nil, err
		}
		if g.Permit != nil {
			return g.Permit, nil
		}
		r.Queued = true
		if info.local || g.Wait > shortWait(t) || try >= shortWaits {
			d.metrics.throttle()
			out := AttemptOutput{Attempt: info.attempt}
			return nil, temporal.NewApplicationErrorWithOptions("throttled: the endpoint's rate_limit or max_in_flight has no slot now; the attempt waits for one",
				ErrTypeThrottled, temporal.ApplicationErrorOptions{
					NonRetryable: true, Category: temporal.ApplicationErrorCategoryBenign,
					NextRetryDelay: g.Wait, Details: []any{out},
				})
		}
		if err := sleepUntil(ctx, g.Wait); err != nil {
			return nil, err
		}
	}
}
