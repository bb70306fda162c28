package throttle_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recordhub/recordhub/activities/throttle"
)

// acquirer is what both throttles offer.
type acquirer interface {
	Acquire(ctx context.Context, r throttle.Request) (throttle.Grant, error)
}

// newKey returns an endpoint key of the test's own.
func newKey() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "whe_test" + hex.EncodeToString(b)
}

// lead is how long before its reserved slot a refused caller asks again,
// as the attempt activity's workflow timer does.
const lead = 100 * time.Millisecond

// drain sends n requests from n callers at once through th, each asking
// again shortly before its reserved slot (or after its wait), as
// deliveries do, and returns the send times: each permit's instant, waited
// for. While a request is sent (hold) it counts the requests in flight and
// returns the most seen, and the most refusals any one caller had.
func drain(t *testing.T, th acquirer, limits throttle.Limits, n int, hold time.Duration) (sent []time.Time, maxInFlight int, refusals int) {
	t.Helper()
	key := newKey()
	var (
		mu        sync.Mutex
		inFlight  atomic.Int64
		most      atomic.Int64
		mostRef   atomic.Int64
		wg        sync.WaitGroup
		errs      = make(chan error, n)
		startLine = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startLine
			refused := int64(0)
			for {
				g, err := th.Acquire(t.Context(), throttle.Request{Key: key, Waiter: fmt.Sprint("d", i), Limits: limits, Within: 2 * lead, Lease: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if g.Permit == nil {
					refused++
					wait := g.Wait
					if g.Reserved {
						wait -= lead
					}
					time.Sleep(wait) // the workflow's timer
					continue
				}
				for {
					m := mostRef.Load()
					if refused <= m || mostRef.CompareAndSwap(m, refused) {
						break
					}
				}
				if err := g.Permit.Wait(t.Context()); err != nil {
					errs <- err
					return
				}
				// The slot's instant, not the time this goroutine woke up
				// after it: how late a busy machine wakes it is not the
				// throttle's doing (Guard allows for some).
				at := g.Permit.At
				c := inFlight.Add(1)
				for {
					m := most.Load()
					if c <= m || most.CompareAndSwap(m, c) {
						break
					}
				}
				mu.Lock()
				sent = append(sent, at)
				mu.Unlock()
				time.Sleep(hold) // the request
				inFlight.Add(-1)
				g.Permit.Release()
				return
			}
		}()
	}
	close(startLine)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
	return sent, int(most.Load()), int(mostRef.Load())
}

// busiestSecond returns the most send times in any one-second window.
func busiestSecond(sent []time.Time) int {
	most, j := 0, 0
	for i := range sent {
		for sent[i].Sub(sent[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// checkRate drains 3 seconds' worth of requests at limit per second from
// as many callers at once: no second's window of the slots granted holds
// more than limit. The rate, and the most refusals a caller had (one,
// unless this machine woke a caller later than its lead), are logged, not
// asserted.
func checkRate(t *testing.T, th acquirer) {
	const limit = 50
	n := 3*limit + 1
	sent, _, refusals := drain(t, th, throttle.Limits{PerSecond: limit}, n, 0)
	if got := busiestSecond(sent); got > limit {
		t.Errorf("busiest second holds %d requests, limit %d", got, limit)
	}
	span := sent[len(sent)-1].Sub(sent[0])
	rate := float64(len(sent)-1) / span.Seconds()
	t.Logf("%d requests from %d callers at once: %.2f/s against a limit of %d/s (%.3f×); at most %d refusals a caller", len(sent), n, rate, limit, rate/limit, refusals)
	if rate > limit {
		t.Errorf("drained at %.1f/s, over the limit %d/s", rate, limit)
	}
}

// checkInFlight drains requests that each take 20 ms from 40 callers with
// at most 3 in flight: never more than 3 at once.
func checkInFlight(t *testing.T, th acquirer) {
	_, most, refusals := drain(t, th, throttle.Limits{MaxInFlight: 3}, 40, 20*time.Millisecond)
	if most > 3 {
		t.Errorf("%d requests in flight at once, limit 3", most)
	}
	if most < 2 {
		t.Errorf("at most %d in flight: the limit of 3 was never used", most)
	}
	t.Logf("40 callers, at most 3 in flight: %d seen at once, %d refusals", most, refusals)
}

// checkWaitsSpread: callers refused one after another are given slots one
// interval apart, in the order they asked, and a caller asking again before
// its slot is told the same slot, not a later one.
func checkWaitsSpread(t *testing.T, th acquirer) {
	key := newKey()
	limits := throttle.Limits{PerSecond: 10}
	interval := (time.Second + throttle.Guard) / 10
	ask := func(w string) throttle.Grant {
		t.Helper()
		g, err := th.Acquire(t.Context(), throttle.Request{Key: key, Waiter: w, Limits: limits, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	var places []place // when each refused caller is told to come back
	for i := range 30 {
		asked := time.Now()
		if g := ask(fmt.Sprint(i)); g.Permit == nil {
			if !g.Reserved {
				t.Errorf("refusal %d is not for the rate", i)
			}
			places = append(places, place{asked.Add(g.Wait), time.Now().Add(g.Wait)})
		}
	}
	if len(places) != 29 {
		t.Fatalf("%d of 30 refused at 10/s, want 29 (all but the first: slots are spaced, not bursts)", len(places))
	}
	checkSpaced(t, places, interval)
	asked := time.Now()
	g := ask("5")
	again := place{asked.Add(g.Wait), time.Now().Add(g.Wait)}
	if g.Permit != nil || again.lo.Sub(places[4].hi) > time.Millisecond || places[4].lo.Sub(again.hi) > time.Millisecond {
		t.Errorf("asking again: %+v, want its place kept", g)
	}
}

// place is when a refused caller is told to come back, as known on this
// clock: between the time it asked and the answer's, each plus the wait.
type place struct{ lo, hi time.Time }

// checkSpaced: places are interval apart (within a millisecond, for
// Redis's clock and rounding), however long each ask took.
func checkSpaced(t *testing.T, places []place, interval time.Duration) {
	t.Helper()
	for i := 1; i < len(places); i++ {
		least, most := places[i].lo.Sub(places[i-1].hi), places[i].hi.Sub(places[i-1].lo)
		if least > interval+time.Millisecond || most < interval-time.Millisecond {
			t.Errorf("place %d is %v to %v after the one before, want %v", i, least, most, interval)
		}
	}
}

// checkLate: a waiter back after its place has passed (its timer fired
// late) is given the next slot at once, not queued again behind those who
// came after it; and a permit used after its instant (the caller's work
// between Acquire and the send overran it) is moved to the next slot.
func checkLate(t *testing.T, th acquirer) {
	key := newKey()
	limits := throttle.Limits{PerSecond: 100}
	ask := func(w string) throttle.Grant {
		t.Helper()
		g, err := th.Acquire(t.Context(), throttle.Request{Key: key, Waiter: w, Limits: limits, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	first := ask("w0")
	if first.Permit == nil {
		t.Fatalf("the first caller: %+v, want a slot at once", first)
	}
	var last time.Time
	for i := 1; i < 10; i++ {
		if g := ask(fmt.Sprint("w", i)); g.Permit == nil {
			last = time.Now().Add(g.Wait)
		}
	}
	// Every place's time passes; w5 comes back only then.
	time.Sleep(time.Until(last.Add(20 * time.Millisecond)))
	g := ask("w5")
	if g.Permit == nil || time.Until(g.Permit.At) > time.Millisecond {
		t.Fatalf("a waiter back after its place: %+v, want the next slot at once", g)
	}
	// The others come back together, all late, while w5 holds the slot
	// within their reach: each is placed again, one interval apart, not
	// told to come back all at once.
	interval := (time.Second + throttle.Guard) / 100
	var places []place
	for _, w := range []string{"w6", "w7", "w8", "w9"} {
		asked := time.Now()
		g := ask(w)
		if g.Permit != nil || !g.Reserved {
			t.Fatalf("%s back late after w5: %+v, want a place", w, g)
		}
		places = append(places, place{asked.Add(g.Wait), time.Now().Add(g.Wait)})
	}
	checkSpaced(t, places, interval)
}

// checkSendLog: a request sent late (its caller woke late) holds back the
// request the limit after it, by as long as it was late: the log of sends
// keeps the second's count where the late send would have broken it. With
// wrote, caller 0 is counted at its instant but written late (Wrote).
func checkSendLog(t *testing.T, th acquirer, wrote bool) {
	key := newKey()
	limits := throttle.Limits{PerSecond: 10}
	var permits []*throttle.Permit
	for i := range 11 {
		g, err := th.Acquire(t.Context(), throttle.Request{Key: key, Waiter: fmt.Sprint(i), Limits: limits, Within: 2 * time.Second, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if g.Permit == nil {
			t.Fatalf("caller %d: %+v, want a permit within 2 s", i, g)
		}
		permits = append(permits, g.Permit)
	}
	// Callers 1 to 9 send at their instants; caller 0 only after them.
	order := append(permits[1:10:10], permits[0])
	if wrote {
		order = permits[:10]
	}
	for _, p := range order {
		if err := p.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if wrote {
		permits[0].Wrote()
	}
	// Ten sends in the log since caller 1's: caller 10 waits until that one
	// is a log window old (a second and 20 ms), past its own instant.
	if err := permits[10].Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if early := time.Until(permits[1].At.Add(time.Second + 20*time.Millisecond)); early > time.Millisecond {
		t.Errorf("caller 10 sent %v before the tenth send before it was a second old", early)
	}
}

// checkLease: a slot in flight never released (its worker died) comes back
// once its lease ends.
func checkLease(t *testing.T, th acquirer) {
	key := newKey()
	limits := throttle.Limits{MaxInFlight: 1}
	const lease = 200 * time.Millisecond
	g, err := th.Acquire(t.Context(), throttle.Request{Key: key, Waiter: "lost", Limits: limits, Lease: lease})
	if err != nil || g.Permit == nil {
		t.Fatalf("first acquire: %+v, %v", g, err)
	}
	taken := time.Now()
	for {
		g, err := th.Acquire(t.Context(), throttle.Request{Key: key, Waiter: "next", Limits: limits, Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		if g.Permit != nil {
			if d := time.Since(taken); d < lease {
				t.Errorf("slot given again %v after it was taken, before its lease of %v ended", d, lease)
			}
			return
		}
		time.Sleep(g.Wait)
	}
}
