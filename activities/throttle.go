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

// slotLead is how long before its place in the endpoint's queue a
// throttled attempt's workflow timer fires: the timer fires late by a
// workflow task's round trip, and the attempt activity then starts and
// reads the event and the endpoint before it asks again. Back early, it
// is given its slot and waits for the slot's instant itself
// (throttle.Permit.Wait), so that it is there when the slot comes; back
// late, it is given the next slot at once. The lead is wide enough for a
// busy machine's round trips, and short enough that an endpoint's waiting
// attempts hold few worker slots (its rate times the lead).
const slotLead = 500 * time.Millisecond

// slotWithin is the longest an attempt activity waits for its rate slot
// itself; a slot further away is waited for on the workflow's timer.
const slotWithin = 2 * slotLead

// localWithin is the longest a local attempt waits for its rate slot: it
// holds its workflow task meanwhile.
const localWithin = 10 * time.Millisecond

// shortWait is the longest refusal for want of a slot in flight that an
// activity waits out itself, up to shortWaits times, instead of answering
// ErrTypeThrottled for the workflow's timer (a timer and a new activity cost
// more history than a few milliseconds' wait is worth). A local attempt
// never waits: it holds a workflow task.
const shortWait = 50 * time.Millisecond

const shortWaits = 3

// acquire takes the endpoint's slot for the attempt info describes. A nil
// permit and a nil error mean the attempt is throttled: err is then the
// ErrTypeThrottled error to return. The permit's instant may be up to
// slotWithin away: the caller waits for it (throttle.Permit.Wait) after
// writing the attempt's row, just before sending.
func (d *Deliverer) acquire(ctx context.Context, in AttemptInput, info activityInfo, t models.Throttle) (*throttle.Permit, error) {
	waiter := info.workflowID
	if waiter == "" {
		waiter = in.EventID
	}
	r := throttle.Request{
		Key: in.EndpointID, Waiter: waiter, Within: slotWithin,
		Limits: throttle.Limits{PerSecond: t.PerSecond, MaxInFlight: t.MaxInFlight},
		Lease:  d.schedule.AttemptTimeout + leaseMargin,
	}
	if info.local {
		r.Within = localWithin
	}
	for try := 0; ; try++ {
		g, err := d.throttle.Acquire(ctx, r)
		if err != nil {
			return nil, err
		}
		if g.Permit != nil {
			return g.Permit, nil
		}
		wait := g.Wait
		if g.Reserved {
			// The timer fires a lead before the delivery's place.
			wait = max(wait-slotLead, time.Millisecond)
		}
		if info.local || g.Reserved || wait > shortWait || try >= shortWaits {
			d.metrics.throttle()
			out := AttemptOutput{Attempt: info.attempt}
			return nil, temporal.NewApplicationErrorWithOptions("throttled: the endpoint's rate_limit or max_in_flight has no slot now; the attempt waits for one",
				ErrTypeThrottled, temporal.ApplicationErrorOptions{
					NonRetryable: true, Category: temporal.ApplicationErrorCategoryBenign,
					NextRetryDelay: wait, Details: []any{out},
				})
		}
		if err := sleepUntil(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// countOnWrite moves the permit's count in the endpoint's log of sends to
// the time the request was written (see throttle.Permit.Wrote).
func (d *Deliverer) countOnWrite(ctx context.Context, permit *throttle.Permit) context.Context {
	if permit == nil {
		return ctx
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { permit.Wrote() }})
}
