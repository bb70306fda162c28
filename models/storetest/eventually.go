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
