package activities

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestScheduleDelay: Initial, doubled after each attempt, capped at
// MaxInterval, as Temporal runs a retry policy.
func TestScheduleDelay(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Schedule
		want []time.Duration // after attempts 1, 2, …
	}{
		{"default", DefaultSchedule(), secs(60, 120, 240, 480, 960, 960, 960)},
		{"configured", Schedule{Initial: 10 * time.Second, MaxInterval: 40 * time.Second}, secs(10, 20, 40, 40)},
		{"cap between two delays", Schedule{Initial: 10 * time.Second, MaxInterval: 25 * time.Second}, secs(10, 20, 25, 25)},
		{"cap below the initial delay", Schedule{Initial: 10 * time.Second, MaxInterval: 5 * time.Second}.WithDefaults(), secs(10, 10, 10)},
	} {
		var got []time.Duration
		for n := range len(tc.want) {
			got = append(got, tc.s.Delay(n+1))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: delays (-want +got):\n%s", tc.name, diff)
		}
	}
	if got := DefaultSchedule().Delay(1_000_000); got != DefaultRetryMaxInterval {
		t.Errorf("delay after attempt 1e6 = %s, want the cap %s", got, DefaultRetryMaxInterval)
	}
}

func secs(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v) * time.Second
	}
	return out
}

// TestScheduleLast: the attempt numbered Attempts or more is the last;
// with Attempts 0 none is.
func TestScheduleLast(t *testing.T) {
	s := Schedule{Attempts: 3}
	for n, want := range map[int]bool{1: false, 2: false, 3: true, 4: true} {
		if got := s.Last(n); got != want {
			t.Errorf("Last(%d) of 3 attempts = %v, want %v", n, got, want)
		}
	}
	if (Schedule{}).Last(1000) {
		t.Error("an attempt is the last of a schedule whose attempts are unknown")
	}
}

func TestScheduleWithDefaults(t *testing.T) {
	for _, tc := range []struct{ in, want Schedule }{
		{Schedule{}, DefaultSchedule()},
		{Schedule{AttemptTimeout: 5 * time.Second, Attempts: 4}, Schedule{Initial: DefaultRetryInitial, MaxInterval: DefaultRetryMaxInterval, AttemptTimeout: 5 * time.Second, Attempts: 4}},
		{Schedule{Initial: 2 * time.Hour}, Schedule{Initial: 2 * time.Hour, MaxInterval: 2 * time.Hour, AttemptTimeout: DefaultTimeout}},
	} {
		if diff := cmp.Diff(tc.want, tc.in.WithDefaults()); diff != "" {
			t.Errorf("%+v with defaults (-want +got):\n%s", tc.in, diff)
		}
	}
}
