package activities

import (
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"300", 300 * time.Second, true},
		{" 0 ", 0, true},
		{"99999999999999999999999", maxRetryAfter, true},
		{now.Add(400 * time.Second).Format(http.TimeFormat), 400 * time.Second, true},
		{"Wednesday, 02-Jan-30 03:10:45 GMT", 400 * time.Second, true}, // RFC 850
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"", 0, false},
		{"-300", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestNextDelay: the larger of the hint and the scheduled delay, capped at
// the maximum interval. The schedule is the activity's retry policy, placed
// by Temporal's attempt number, or a local attempt's, placed by the
// delivery attempt number; without a policy, the configured one placed by
// the delivery attempt number.
func TestNextDelay(t *testing.T) {
	d := &Deliverer{schedule: DefaultSchedule()}
	configured := func(attempt int) activityInfo { return activityInfo{attempt: attempt, try: attempt} }
	// An activity that goes on after a local first attempt: its policy
	// starts at the delay after attempt 2.
	shifted := &temporal.RetryPolicy{InitialInterval: 120 * time.Second, BackoffCoefficient: 2, MaximumInterval: 960 * time.Second}
	whole := &temporal.RetryPolicy{InitialInterval: 60 * time.Second, BackoffCoefficient: 2, MaximumInterval: 960 * time.Second, MaximumAttempts: 1}
	tests := []struct {
		name string
		info activityInfo
		hint time.Duration
		want time.Duration
	}{
		{"hint above the schedule", configured(1), 300 * time.Second, 300 * time.Second},
		{"hint below the schedule", configured(1), 5 * time.Second, 60 * time.Second},
		{"third attempt", configured(3), 200 * time.Second, 240 * time.Second},
		{"hint capped", configured(1), 5000 * time.Second, 960 * time.Second},
		{"late attempt", configured(90), time.Second, 960 * time.Second},
		{"longest hint", configured(1), maxRetryAfter, 960 * time.Second},
		{"activity after a local attempt, its first try", activityInfo{attempt: 2, try: 1, policy: shifted}, 0, 120 * time.Second},
		{"activity after a local attempt, its third try", activityInfo{attempt: 4, try: 3, policy: shifted}, 0, 480 * time.Second},
		{"local first attempt", activityInfo{attempt: 1, try: 1, local: true, policy: whole}, 0, 60 * time.Second},
		{"local attempt numbered 2 after a lost one", activityInfo{attempt: 2, try: 1, local: true, policy: whole}, 0, 120 * time.Second},
		{"local attempt with a hint", activityInfo{attempt: 1, try: 1, local: true, policy: whole}, 300 * time.Second, 300 * time.Second},
	}
	for _, tc := range tests {
		if got := d.nextDelay(tc.info, tc.hint); got != tc.want {
			t.Errorf("%s: nextDelay(%+v, hint %v) = %v, want %v", tc.name, tc.info, tc.hint, got, tc.want)
		}
	}
}
