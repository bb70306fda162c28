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
//   - right before it sends, a request is counted in a log of the sends
//     made in the last second and 50 ms (Permit.Wait), and once written
//     its count moves to the write's time (Permit.Wrote). Sent on time, it
//     always fits; sent late (its caller woke late, the row written
//     between Acquire and the send overran the instant, or the process
//     held it between count and write), it holds back the request the
//     limit after it by as long as it was late, and nothing else.
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
// With evenly spaced instants and the log, what is left to the guard is
// the time from a request's write to the receiver's reading of its clock:
// under a millisecond on an idle machine, and up to hundreds on a busy
// 2-core one (seen when the receiver shared the process of two workers and
// a Temporal server, whose goroutines held its readings back). The guard
// widens with the delays this process sees in waking for its instants
// (see wakeups), which such a machine shows too.
//
// The two-worker test's traces also showed what the log and the write's
// count are for: requests whose process was starved after their instant
// reached the receiver several within a millisecond. At 25/s it counted 29
// in a second without the log, 26 and 27 with the log counting before the
// write, 25 with both (one run each, load average 2 to 7).
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
	// sending counts the send in the endpoint's log of sends, or answers
	// how long to wait first: nil without a rate.
	sending func(ctx context.Context) (time.Duration, error)
	wrote   func()
	release func()
	// wakeups learns how late this process wakes for At.
	wakeups *wakeups
}

// Wait returns when the request may be sent: at the permit's instant, and
// once the send is counted in the endpoint's log of the sends made in the
// last second and a guard (logWindow). The log holds back a send that
// would make more than the limit in that window, which only a send made
// late does (its caller woke late, or its work between Acquire and the
// send overran the instant): the request after it by the limit waits as
// long as it was late. Call it right before the send. Its error is ctx's,
// or the throttle's store's: the request must not be sent then.
func (p *Permit) Wait(ctx context.Context) error {
	if p == nil {
		return nil
	}
	d := time.Until(p.At)
	for try := 0; ; try++ {
		if d > 0 {
			t := time.NewTimer(d)
			due := time.Now().Add(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
			if p.wakeups != nil {
				p.wakeups.observe(time.Now(), time.Since(due))
			}
		}
		if p.sending == nil {
			return ctx.Err()
		}
		var err error
		if d, err = p.sending(ctx); err != nil || d <= 0 {
			return err
		}
	}
}

// Wrote moves the send's count in the log to now: call it once the
// request is written. A busy machine may hold a request between its count
// and its write for tens of milliseconds or more; counted from the write,
// it holds back the request the limit after it by as much. Best effort:
// on the store's failure the count stays where Wait put it.
func (p *Permit) Wrote() {
	if p != nil && p.wrote != nil {
		p.wrote()
	}
}

// Release gives the in-flight slot back once the request ended.
func (p *Permit) Release() {
	if p != nil && p.release != nil {
		p.release()
	}
}

// Guard widens the slots' spacing, at least (see wakeups): N instants span
// one second and the guard,
// so that the receiver's count of any second stays within N while requests
// leave and arrive up to Guard after their instants (a timer's wake-up, a
// scheduler's delay, the receiver's own delay in reading its clock): send
// i+N leaves at least a second after send i. It costs the drain rate 3 %.
const Guard = 30 * time.Millisecond

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

// interval is the spacing of the rate's instants with guard g.
func (l Limits) interval(g time.Duration) time.Duration {
	return (time.Second + g) / time.Duration(l.PerSecond)
}

// logWindow is the span the log of sends holds the limit over (see
// Permit.Wait): a second and a margin for the time from a send's count to
// the receiver's reading of its clock. With 10 ms, a receiver on the same
// busy 2-core machine still counted 21 at 20/s; with 20 ms, one on a
// slower machine counted 26 at 25/s, the first of its busiest second
// arriving some 40 ms after its count. It does not widen with the guard:
// widened at once, it held back the sends whose instants were granted
// before, spaced narrower, by up to seconds.
const logWindow = time.Second + 50*time.Millisecond

// maxGuard bounds the guard a busy machine widens (see wakeups): the
// drain rate stays above 0.8 of the limit.
const maxGuard = 250 * time.Millisecond

// wakeups follows how late this process wakes for its permits' instants,
// as the most seen in the last 10 to 20 seconds. A machine that wakes a
// goroutine late also delays the send after it, and a receiver on the
// same machine in reading its clock, by as much: the spacing of instants
// widens by twice that (guard), so that the receiver's count of a second
// stays within the limit while the machine is busy, at the cost of some of
// the drain rate meanwhile.
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

// guard is the guard now: Guard, or twice the latest wake-ups seen, up to
// maxGuard.
func (w *wakeups) guard(now time.Time) time.Duration {
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
