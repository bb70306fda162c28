// Package throttle holds endpoints' throttles: at most a number of
// requests in any one second, and at most a number in flight at once.
// Memory holds them within one process; Redis across every process that
// shares the Redis. Each decision is atomic (a mutex; one Lua script).
//
// # A rate is a schedule of evenly spaced sends
//
// A rate_limit of N grants send instants 1/N s apart (a little more: see
// Guard). A caller whose instant is near (Request.Within) is granted it and
// waits in its own process until that instant before it sends
// (Permit.Wait). A caller further back is refused and given a place in the
// endpoint's queue, kept under its Waiter name: after the callers already
// waiting, one interval each. It comes back a little before its place (a
// workflow timer), and is then granted the next instant. The place only
// says when to come back; the instants bind. So:
//   - requests reach the receiver evenly spaced, never in bursts, and a
//     second at the receiver holds N of them, as long as each leaves
//     within the guard of its instant;
//   - a caller back late (its timer fired late) loses nothing and costs
//     nothing: it is granted the next instant, and no instant was set
//     aside for it meanwhile. Callers back together, their places passed,
//     are placed again one interval apart, so that they do not come back
//     together again;
//   - a place whose caller never comes back (its delivery ended, its
//     worker died) counts in the queue's length, which later callers are
//     placed after, for a minute at most: it delays them a little, and
//     stalls nothing;
//   - a permit not used in time (the row written between Acquire and the
//     send took longer than the instant was away) takes the next instant
//     instead when its Wait is called late.
//
// # Why: what the window and its queue did
//
// The design this replaced counted the requests sent in the last second
// and a guard (50 ms), let up to N through at once while nobody waited,
// and told refused callers when to ask again, placing them in a queue of
// times (a GCRA-like tat). A backlog at 20/s drained at 0.45-0.84× the
// limit, and the receiver counted up to 23 requests in a second. Why, from
// its code and from traces of the two-worker end-to-end test taken while
// replacing it (each Acquire, send and arrival, on a 2-core machine):
//   - A wait was a hint, not a turn: a refused delivery came back when
//     told, plus a workflow task's round trip and an activity's start, and
//     the second's room had meanwhile gone to whoever asked first. It was
//     refused again, each refusal costing a timer, an activity and two
//     workflow tasks. On a busy machine those round trips took from half a
//     second to several (seen), and the extra refusals made them longer.
//     Any scheme that makes a late caller lose its turn (a slot reserved
//     for it and given up when it is late, tried while replacing this one)
//     feeds the same spiral: it drained at 0.23× the limit.
//   - The window filled in bursts of N, each next one as the one before
//     left it: N requests sent at once reach the receiver spread over tens
//     of milliseconds, so the last of one burst and the first of the next
//     fall within one second at the receiver though a second apart at the
//     sender; the guard that covers that spread is what capped the drain.
//   - A request was counted when its slot was taken and restamped once its
//     row was written; decisions taken between counted it too early.
//
// With evenly spaced instants what varies is only how late each send
// leaves and arrives: from the wake-up to the receiver's clock, a few
// milliseconds, and tens on a machine whose cores are busy. The guard
// grows with the wake-ups this process sees (see wakeups).
package throttle

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Limits is one endpoint's throttle; a zero member is no limit.
type Limits struct {
	// PerSecond: at most this many requests in any one second.
	PerSecond int
	// MaxInFlight: at most this many requests at once, from Acquire until
	// Permit.Release.
	MaxInFlight int
}

// Request is a caller's ask for one request's slot.
type Request struct {
	// Key names the endpoint.
	Key string
	// Waiter names the caller across its tries (a delivery): its places
	// in the rate's queue and in the in-flight queue are kept under this
	// name.
	Waiter string
	Limits Limits
	// Within is the longest the caller will wait for its send instant
	// itself (Permit.Wait): a caller whose instant, or place, is further
	// away is refused.
	Within time.Duration
	// Lease: a slot in flight not released by then is taken back (its
	// process died); the attempt's longest run and a margin.
	Lease time.Duration
}

// Grant is the answer to Acquire: a Permit, or the wait before trying
// again.
type Grant struct {
	// Permit is nil when refused.
	Permit *Permit
	// Wait is how long a refused caller waits before asking again: until
	// its place in the rate's queue when Reserved, else the in-flight
	// queue's estimate of its turn.
	Wait time.Duration
	// Reserved: the wait is to the caller's place in the rate's queue,
	// which is kept for it; it should ask again a little before, to be
	// there when its instant comes. Late costs it nothing but the time.
	Reserved bool
}

// Permit is one request's slot.
type Permit struct {
	// At is the slot's instant on this process's clock: the request is
	// sent no earlier.
	At time.Time
	// again takes the rate's next instant at once, for a caller past its
	// own: nil without a rate.
	again   func(ctx context.Context) (time.Time, error)
	release func()
	// wakeups learns how late this process woke for At.
	wakeups *wakeups
}

// Wait returns at the permit's instant, or when ctx ends. Called more than
// Late after the instant (the work between Acquire and the send overran
// it), it takes the rate's next slot instead, at once, and waits for that:
// a request sent late could fall within a second of the one N slots after
// it. Its error is ctx's, or the throttle's store's: the request must not
// be sent then.
func (p *Permit) Wait(ctx context.Context) error {
	if p == nil {
		return nil
	}
	for try := 0; ; try++ {
		if p.again != nil && time.Since(p.At) > Late {
			at, err := p.again(ctx)
			if err != nil {
				return err
			}
			p.At = at
		}
		if d := time.Until(p.At); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
			if p.wakeups != nil {
				p.wakeups.observe(time.Now(), time.Since(p.At))
			}
		}
		// A busy machine may wake this goroutine late: the same holds.
		if p.again == nil || time.Since(p.At) <= Late || try == maxAgain {
			return ctx.Err()
		}
	}
}

// maxAgain bounds the slots a late permit takes again.
const maxAgain = 2

// Release gives the in-flight slot back once the request ended.
func (p *Permit) Release() {
	if p != nil && p.release != nil {
		p.release()
	}
}

// Guard widens the slots' spacing, at least (see wakeups): N instants
// span one second and the guard, so that the receiver's count of any second
// stays within N while requests leave up to the guard after their instants
// (a timer's wake-up, a scheduler's delay, a connection's set-up, the
// receiver's own delay in reading its clock): send i+N leaves at least a
// second after send i. It costs the drain rate 3 %.
const Guard = 30 * time.Millisecond

// Late is how long after its instant a permit may still be used: a caller
// later than that takes a new slot (Permit.Wait). A third of Guard, which
// also covers the time from the wake-up to the receiver's clock reading.
const Late = 10 * time.Millisecond

// placeGrace is how long after its place a refused waiter keeps it: one
// back later than that (its timers stalled for as long) is queued again,
// at the end. Until then the place counts in the queue's length, which a
// new caller is placed after.
const placeGrace = time.Minute

// defaultHold is the time a request is taken to hold its slot in flight
// until the first release measured one.
const defaultHold = 100 * time.Millisecond

// minWait bounds every wait from below: waits shorter than this are
// rounded up, so that a queue is never polled in a tight loop.
const minWait = 5 * time.Millisecond

// waiterTTL forgets a waiter in the in-flight queue that has not asked
// again for this long (its delivery ended otherwise).
const waiterTTL = 10 * time.Minute

var errLimits = errors.New("throttle: limits must not be negative")

func (l Limits) check() error {
	if l.PerSecond < 0 || l.MaxInFlight < 0 {
		return errLimits
	}
	return nil
}

// interval is the spacing of the rate's slots with guard g.
func (l Limits) interval(g time.Duration) time.Duration {
	return (time.Second + g) / time.Duration(l.PerSecond)
}

// maxGuard bounds the guard a busy machine widens (see wakeups): the
// drain rate stays above 0.8 of the limit.
const maxGuard = 250 * time.Millisecond

// wakeups follows how late this process wakes for its permits' instants,
// as the most seen in the last 10 to 20 seconds. A machine that wakes a
// goroutine late also delays the send after the wake-up, and the
// receiver's reading of its clock, by as much: the slots' spacing is
// widened by twice that (guard), so that the receiver's count of a second
// stays within the limit while the machine is busy, at the cost of some
// of the drain rate meanwhile.
type wakeups struct {
	mu        sync.Mutex
	start     time.Time
	cur, prev time.Duration
}

func (w *wakeups) observe(now time.Time, late time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roll(now)
	w.cur = max(w.cur, late)
}

func (w *wakeups) roll(now time.Time) {
	switch d := now.Sub(w.start); {
	case d >= 20*time.Second:
		w.start, w.cur, w.prev = now, 0, 0
	case d >= 10*time.Second:
		w.start, w.cur, w.prev = now, 0, w.cur
	}
}

// guard is the spacing's guard now: Guard, or twice the latest wake-ups
// seen, up to maxGuard.
func (w *wakeups) guard(now time.Time) time.Duration {
	if w == nil {
		return Guard
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roll(now)
	return min(max(Guard, 2*max(w.cur, w.prev)), maxGuard)
}

// holdWait is the in-flight queue's estimate for the waiter at rank (0
// first): its turn comes after rank/max rounds of holds.
func holdWait(hold time.Duration, rank, maxInFlight int) time.Duration {
	return hold * time.Duration(rank/maxInFlight+1)
}
