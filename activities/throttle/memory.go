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
	now func() time.Time
	mu  sync.Mutex
	eps map[string]*memState
	// ids numbers the slots in flight.
	ids     uint64
	wakeups wakeups
}

type memState struct {
	// next is the rate's next free slot: the last one granted and an
	// interval.
	next time.Time
	// places are the refused waiters' places in the queue: when each is
	// to ask again.
	places map[string]time.Time
	// log holds the sends made in the last logWindow, oldest first.
	log []time.Time
	// tail is the place after the last waiter placed again.
	tail     time.Time
	inFlight map[uint64]time.Time // id → lease's end
	// waiters are the in-flight queue's, by first ask.
	waiters []waiter
	hold    time.Duration
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
		return Grant{Permit: &Permit{At: m.now()}}, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	st := m.eps[r.Key]
	if st == nil {
		st = &memState{places: map[string]time.Time{}, inFlight: map[uint64]time.Time{}, hold: defaultHold}
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
	at := now
	if l := r.Limits; l.PerSecond > 0 {
		var wait time.Duration
		if at, wait = st.rate(now, r.Waiter, l.interval(m.wakeups.guard(now)), r.Within); wait > 0 {
			return Grant{Wait: max(wait, minWait), Reserved: true}, nil
		}
	}
	p := &Permit{At: at}
	if l := r.Limits; l.PerSecond > 0 {
		var at time.Time
		p.sending = func(context.Context) (time.Duration, error) {
			var wait time.Duration
			at, wait = m.sending(r.Key, l)
			return wait, nil
		}
		p.wrote = func() { m.wrote(r.Key, at) }
		p.wakeups = &m.wakeups
	}
	if r.Limits.MaxInFlight > 0 {
		m.ids++
		id := m.ids
		st.inFlight[id] = now.Add(r.Lease)
		st.waiters = slices.DeleteFunc(st.waiters, func(w waiter) bool { return w.name == r.Waiter })
		p.release = func() { m.release(r.Key, id, now) }
	}
	return Grant{Permit: p}, nil
}

// rate answers waiter's ask for a slot of interval's rate: the slot's
// instant, or a wait above 0 when it is more than within away.
func (st *memState) rate(now time.Time, waiter string, interval, within time.Duration) (time.Time, time.Duration) {
	at := later(st.next, now)
	place, ok := st.places[waiter]
	if !ok {
		place = at.Add(time.Duration(len(st.places)) * interval)
	}
	if wait := place.Sub(now); wait > within {
		st.places[waiter] = place
		return time.Time{}, wait
	}
	if wait := at.Sub(now); wait > within {
		// Its place has come, but the slots within its reach are taken:
		// the callers placed before it came late, or together. It is
		// placed again after the others whose place has come, so that
		// they do not come back together again.
		due := 0 // the others whose place has come
		for w, p := range st.places {
			if w != waiter && !p.After(at) {
				due++
			}
		}
		place = later(st.tail, at.Add(time.Duration(due)*interval))
		st.tail = place.Add(interval)
		st.places[waiter] = place
		return time.Time{}, place.Sub(now)
	}
	delete(st.places, waiter)
	st.next = at.Add(interval)
	return at, 0
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// sending counts a send in the endpoint's log, or answers how long to wait
// first: see Permit.Wait. Its count's time is at.
func (m *Memory) sending(key string, l Limits) (at time.Time, wait time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	st := m.eps[key]
	if st == nil {
		return now, 0
	}
	st.expire(now)
	if n := len(st.log); n >= l.PerSecond {
		if wait := st.log[n-l.PerSecond].Add(logWindow).Sub(now); wait > 0 {
			return time.Time{}, wait
		}
	}
	st.log = append(st.log, now)
	return now, 0
}

// wrote moves the count made at at to now: see Permit.Wrote.
func (m *Memory) wrote(key string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.eps[key]
	if st == nil {
		return
	}
	i := slices.IndexFunc(st.log, func(t time.Time) bool { return t.Equal(at) })
	if i < 0 {
		return
	}
	st.log = slices.Delete(st.log, i, i+1)
	now := m.now()
	j, _ := slices.BinarySearchFunc(st.log, now, time.Time.Compare)
	st.log = slices.Insert(st.log, j, now)
}

// expire forgets what time has passed by: places of waiters that did not
// come back, leases ended, in-flight waiters gone.
func (st *memState) expire(now time.Time) {
	i := 0
	for i < len(st.log) && now.Sub(st.log[i]) >= logWindow {
		i++
	}
	st.log = st.log[i:]
	for w, at := range st.places {
		if now.Sub(at) > placeGrace {
			delete(st.places, w)
		}
	}

	for id, end := range st.inFlight {
		if !end.After(now) {
			delete(st.inFlight, id)
		}
	}
	st.waiters = slices.DeleteFunc(st.waiters, func(w waiter) bool { return !w.end.After(now) })
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
}
