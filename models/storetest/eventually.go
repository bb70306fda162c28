package storetest

import (
	"testing"
	"time"
)

// Eventually calls cond until it holds, and fails the test (t.Fatalf, so
// only from the test's goroutine) when within has passed first. within is
// a bound the code under test promises, generous enough for a loaded
// machine, never a speed target: a condition that holds sooner ends the
// wait sooner. cond is called at once, then after pauses that grow from
// 1 ms to 100 ms, so that quick conditions are seen quickly and a long
// wait's polling (a count query, say) takes little from the code it waits
// for. A cond that fails the test ends the wait.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	failed := t.Failed()
	for !cond() {
		if !failed && t.Failed() {
			t.FailNow() // cond reported an error: waiting longer shows nothing more
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// WhileProgressing waits for bulk work (a thousand deliveries, a
// recovery's pages): it calls progress until it reports done, and fails
// the test only when the count it reports (deliveries made, rows written)
// has not grown for stall. A busy machine slows the work down but cannot
// fail the wait while the work goes on; work that stops fails it within
// stall, with the last count. Polling is as Eventually's.
func WhileProgressing(t testing.TB, stall time.Duration, what string, progress func() (n int, done bool)) {
	t.Helper()
	pause := time.Millisecond
	failed := t.Failed()
	last, moved := -1, time.Now()
	for {
		n, done := progress()
		if done {
			return
		}
		if !failed && t.Failed() {
			t.FailNow()
		}
		if n != last {
			last, moved = n, time.Now()
		} else if time.Since(moved) > stall {
			t.Fatalf("%s: stalled at %d for %v", what, n, stall)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}
