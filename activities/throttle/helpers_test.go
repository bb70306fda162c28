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

// drain sends n requests from n callers at once through th, each asking
// again after its wait, as deliveries do, and returns the send times.
// While a request is sent (hold) it counts the requests in flight and
// returns the most seen.
func drain(t *testing.T, th acquirer, limits throttle.Limits, n int, hold time.Duration) (sent []time.Time, maxInFlight int, refusals int) {
	t.Helper()
	key := newKey()
	var (
		mu        sync.Mutex
		inFlight  atomic.Int64
		most      atomic.Int64
		refused   atomic.Int64
		wg        sync.WaitGroup
		errs      = make(chan error, n)
		startLine = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startLine
			queued := false
			for {
				g, err := th.Acquire(t.Context(), throttle.Request{Key: key, Waiter: fmt.Sprint("d", i), Queued: queued, Limits: limits, Lease: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if g.Permit == nil {
					refused.Add(1)
					queued = true
					time.Sleep(g.Wait) // the workflow's timer
					continue
				}
				// The request is written, then its slot stamped, as the
				// deliverer does.
				at := time.Now()
				if err := g.Permit.Sending(); err != nil {
					errs <- err
				}
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
	return sent, int(most.Load()), int(refused.Load())
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
// as many callers at once: no second's window holds more than limit, and
// the drain runs at 0.9 of the limit or more.
func checkRate(t *testing.T, th acquirer) {
	const limit = 50
	n := 3*limit + 1
	sent, _, refusals := drain(t, th, throttle.Limits{PerSecond: limit}, n, 0)
	if got := busiestSecond(sent); got > limit {
		t.Errorf("busiest second holds %d requests, limit %d", got, limit)
	}
	span := sent[len(sent)-1].Sub(sent[0])
	rate := float64(len(sent)-1) / span.Seconds()
	t.Logf("%d requests from %d callers at once: %.1f/s against a limit of %d/s (%.3f×), %d refusals", len(sent), n, rate, limit, rate/limit, refusals)
	if rate > limit {
		t.Errorf("drained at %.1f/s, over the limit %d/s", rate, limit)
	}
	// Each caller is refused about once: its wait places it in the queue.
	if refusals > 2*n {
		t.Errorf("%d refusals for %d callers: the queue is being polled", refusals, n)
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

// checkWaitsSpread: callers refused one after another are placed one
// interval apart, not told to come back all at once.
func checkWaitsSpread(t *testing.T, th acquirer) {
	key := newKey()
	limits := throttle.Limits{PerSecond: 10}
	var waits []time.Duration
	for i := range 30 {
		g, err := th.Acquire(t.Context(), throttle.Request{Key: key, Waiter: fmt.Sprint(i), Limits: limits, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if g.Permit == nil {
			waits = append(waits, g.Wait)
		}
	}
	if len(waits) != 20 {
		t.Fatalf("%d of 30 refused at 10/s, want 20", len(waits))
	}
	for i := 1; i < len(waits); i++ {
		if d := waits[i] - waits[i-1]; d < 90*time.Millisecond {
			t.Errorf("wait %d is %v after the one before (%v then %v), want about 102 ms", i, d, waits[i-1], waits[i])
		}
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
