// Package throttle holds endpoints' throttles: at most a number of
// requests started in any one second, and at most a number in flight at
// once. Memory holds them within one process; Redis across every process
// that shares the Redis. Both hand the callers they refuse a wait that
// places them in a queue, so that a backlog of deliveries spreads over
// time instead of polling.
package throttle

import (
	"errors"
	"time"
)

// Limits is one endpoint's throttle; a zero member is no limit.
type Limits struct {
	// PerSecond: at most this many requests in any one second, counted at
	// the time each request is sent (Permit.Sending).
	PerSecond int
	// MaxInFlight: at most this many requests at once, from Acquire until
	// Permit.Release.
	MaxInFlight int
}

// Request is a caller's ask for one request's slot.
type Request struct {
	// Key names the endpoint.
	Key string
	// Waiter names the caller across its tries (a delivery), so that it
	// keeps its place in the in-flight queue.
	Waiter string
	// Queued: the caller was refused before and comes back at the time
	// its wait said: it holds a place in the rate's queue, and is not put
	// at the end of it again.
	Queued bool
	Limits Limits
	// Lease: a slot in flight not released by then is taken back (its
	// process died); the attempt's longest run and a margin.
	Lease time.Duration
}

// Grant is the answer to Acquire: a Permit, or the wait before trying
// again.
type Grant struct {
	// Permit is nil when refused.
	Permit *Permit
	// Wait is how long a refused caller waits before asking again, with
	// Request.Queued set.
	Wait time.Duration
}

// Permit is one request's slot.
type Permit struct {
	sending func() error
	release func()
}

// Sending stamps the slot with the time the request is sent: a second's
// window is counted at send times, so that the time between Acquire and
// the send (a database write) cannot bunch requests into one second.
// Call it once the request is written (a slot's stamp only moves later,
// which never lets more through). Its error is the store's; the slot stays
// counted at its Acquire time then.
func (p *Permit) Sending() error {
	if p == nil || p.sending == nil {
		return nil
	}
	return p.sending()
}

// Release gives the in-flight slot back once the request ended.
func (p *Permit) Release() {
	if p != nil && p.release != nil {
		p.release()
	}
}

// Guard is added to the one-second window: a request counted at its send
// time reaches the receiver a little later, by a varying amount (a
// scheduler's delay, a connection's set-up), and the guard keeps the
// receiver's own count of any second within the limit while that delay
// varies by up to this much. It costs the drain rate 5 %: the limit is
// held over 1.05 s windows. 20 ms was seen too little on a loaded 2-core
// machine, where a receiver's own clock readings lag by more.
const Guard = 50 * time.Millisecond

// window is the span a PerSecond limit is held over.
const window = time.Second + Guard

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

// interval is the spacing of the rate's queue: PerSecond slots a window.
func (l Limits) interval() time.Duration {
	return window / time.Duration(l.PerSecond)
}

// holdWait is the in-flight queue's estimate for the waiter at rank (0
// first): its turn comes after rank/max rounds of holds.
func holdWait(hold time.Duration, rank, maxInFlight int) time.Duration {
	return hold * time.Duration(rank/maxInFlight+1)
}
