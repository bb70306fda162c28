package storetest

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// recorder stands in for a test's T, keeping what Eventually reports.
type recorder struct {
	testing.TB
	fatal  string
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Failed() bool          { return r.failed }
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) FailNow() {
	r.failed = true
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	r.FailNow()
}

// run calls Eventually on its own goroutine, as a test would, and returns
// what it reported.
func run(within time.Duration, cond func(r *recorder) bool) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(r, within, "the thing", func() bool { return cond(r) })
	}()
	<-done
	return r
}

func TestEventually(t *testing.T) {
	calls := 0
	if r := run(time.Minute, func(*recorder) bool { calls++; return calls == 3 }); r.failed || calls != 3 {
		t.Errorf("a condition true at the third call: failed %v after %d calls, want success after 3", r.failed, calls)
	}
	if r := run(10*time.Millisecond, func(*recorder) bool { return false }); r.fatal != "the thing: not within 10ms" {
		t.Errorf("a condition never true reported %q", r.fatal)
	}
	calls = 0
	r := run(time.Minute, func(r *recorder) bool { calls++; r.Errorf("bad"); return false })
	if !r.failed || r.fatal != "" || calls != 1 {
		t.Errorf("a condition that fails the test: failed %v, fatal %q after %d calls; want the wait ended after 1", r.failed, r.fatal, calls)
	}
}

// runProgress calls WhileProgressing as run calls Eventually.
func runProgress(stall time.Duration, progress func(r *recorder) (int, bool)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WhileProgressing(r, stall, "the work", func() (int, bool) { return progress(r) })
	}()
	<-done
	return r
}

func TestWhileProgressing(t *testing.T) {
	// Work that goes on, one step per call, never fails however long it
	// takes in all: each step comes well within the stall bound.
	calls := 0
	if r := runProgress(time.Minute, func(*recorder) (int, bool) { calls++; return calls, calls == 10 }); r.failed || calls != 10 {
		t.Errorf("steady work: failed %v after %d calls, want done after 10", r.failed, calls)
	}
	// Work that stops fails with the count it stopped at.
	calls = 0
	r := runProgress(20*time.Millisecond, func(*recorder) (int, bool) { calls++; return min(calls, 3), false })
	if r.fatal != "the work: stalled at 3 for 20ms" {
		t.Errorf("stopped work reported %q", r.fatal)
	}
	// A progress func that fails the test ends the wait.
	calls = 0
	r = runProgress(time.Minute, func(r *recorder) (int, bool) { calls++; r.Errorf("bad"); return calls, false })
	if !r.failed || r.fatal != "" || calls != 1 {
		t.Errorf("a progress that fails the test: failed %v, fatal %q after %d calls; want the wait ended after 1", r.failed, r.fatal, calls)
	}
}
