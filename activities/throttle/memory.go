package throttle

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Memory holds throttles within one process. Its state is lost when the
// process ends, and other processes do not see it: it holds a throttle
// only where one process sends every request (serve with its worker in
// it).
type Memory struct {
	now  func() time.Time
	mu   sync.Mutex
	eps  map[string]*memState
	next uint64
}

type memState struct {
	// log holds the stamps of the requests counted in the window,
	// oldest first.
	log []stamp
	// tat is the time of the rate queue's next free place.
	tat      time.Time
	inFlight map[uint64]time.Time // id → lease's end
	// waiters are the in-flight queue's, by first ask.
	waiters []waiter
	hold    time.Duration
}

type stamp struct {
	id uint64
	at time.Time
}

type waiter struct {
	name       string
	first, end time.Time
}

// NewMemory returns an in-process throttle on clock now (time.Now when
// nil).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, eps: map[string]*memState{}}
}

// Acquire asks for a slot of r.Key.
func (m *Memory) Acquire(_ context.Context, r Request) (Grant, error) {
	if err := r.Limits.check(); err != nil {
		return Grant{}, err
	}
	if r.Limits == (Limits{}) {
		return Grant{Permit: &Permit{}}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	st := m.eps[r.Key]
	if st == nil {
		st = &memState{inFlight: map[uint64]time.Time{}, hold: defaultHold}
		m.eps[r.Key] = st
	}
	st.expire(now)
	if n := r.Limits.MaxInFlight; n > 0 && len(st.inFlight) >= n {
		rank := slices.IndexFunc(st.waiters, func(w waiter) bool { return w.name == r.Waiter })
		if rank < 0 {
			st.waiters = append(st.waiters, waiter{name: r.Waiter, first: now})
			rank = len(st.waiters) - 1
		}
		st.waiters[rank].end = now.Add(waiterTTL)
		return Grant{Wait: max(holdWait(st.hold, rank, n), minWait)}, nil
	}
	if l := r.Limits.PerSecond; l > 0 {
		if wait, ok := st.rate(now, r.Limits, r.Queued); !ok {
			return Grant{Wait: max(wait, minWait)}, nil
		}
	}
	m.next++
	id := m.next
	if r.Limits.PerSecond > 0 {
		st.log = append(st.log, stamp{id: id, at: now})
	}
	if r.Limits.MaxInFlight > 0 {
		st.inFlight[id] = now.Add(r.Lease)
		st.waiters = slices.DeleteFunc(st.waiters, func(w waiter) bool { return w.name == r.Waiter })
	}
	p := &Permit{
		sending: func() error { m.restamp(r.Key, id); return nil },
		release: func() { m.release(r.Key, id, now) },
	}
	return Grant{Permit: p}, nil
}

// rate decides on the rate, and on a refusal places the caller in the
// queue (wait) unless it holds its place already.
func (st *memState) rate(now time.Time, l Limits, queued bool) (time.Duration, bool) {
	full := len(st.log) >= l.PerSecond
	var free time.Time // when the window has room again
	if full {
		free = st.log[len(st.log)-l.PerSecond].at.Add(window)
	}
	// A fresh caller passes while the queue holds less than a window's
	// worth: a burst of up to the limit goes at once, as long as nobody
	// waits.
	if queued || !st.tat.After(now.Add(window-l.interval())) {
		if !full {
			if !queued {
				st.tat = later(st.tat, now).Add(l.interval())
			}
			return 0, true
		}
		if queued {
			return free.Sub(now), false
		}
	}
	at := later(later(st.tat, now), free)
	st.tat = at.Add(l.interval())
	return at.Sub(now), false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (st *memState) expire(now time.Time) {
	cut := now.Add(-window)
	i := 0
	for i < len(st.log) && !st.log[i].at.After(cut) {
		i++
	}
	st.log = st.log[i:]
	for id, end := range st.inFlight {
		if !end.After(now) {
			delete(st.inFlight, id)
		}
	}
	st.waiters = slices.DeleteFunc(st.waiters, func(w waiter) bool { return !w.end.After(now) })
}

func (m *Memory) restamp(key string, id uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.eps[key]
	if st == nil {
		return
	}
	i := slices.IndexFunc(st.log, func(s stamp) bool { return s.id == id })
	if i < 0 {
		return
	}
	st.log = slices.Delete(st.log, i, i+1)
	now := m.now()
	j, _ := slices.BinarySearchFunc(st.log, now, func(s stamp, t time.Time) int { return s.at.Compare(t) })
	st.log = slices.Insert(st.log, j, stamp{id: id, at: now})
}

func (m *Memory) release(key string, id uint64, start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.eps[key]
	if st == nil {
		return
	}
	if _, ok := st.inFlight[id]; ok {
		delete(st.inFlight, id)
		st.hold = (st.hold*4 + m.now().Sub(start)) / 5
	}
	if len(st.log) == 0 && len(st.inFlight) == 0 && len(st.waiters) == 0 && !st.tat.After(m.now()) {
		delete(m.eps, key)
	}
}
