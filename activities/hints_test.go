package activities

import (
	"net/http"
	"testing"
	"time"
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
// the maximum interval.
func TestNextDelay(t *testing.T) {
	d := &Deliverer{schedule: schedule{initial: 60 * time.Second, coefficient: 2, maxInterval: 960 * time.Second}}
	tests := []struct {
		attempt int
		hint    time.Duration
		want    time.Duration
	}{
		{1, 300 * time.Second, 300 * time.Second},
		{1, 5 * time.Second, 60 * time.Second},
		{3, 200 * time.Second, 240 * time.Second},
		{1, 5000 * time.Second, 960 * time.Second},
		{90, time.Second, 960 * time.Second},
		{1, maxRetryAfter, 960 * time.Second},
	}
	for _, tc := range tests {
		if got := d.nextDelay(t.Context(), tc.attempt, tc.hint); got != tc.want {
			t.Errorf("nextDelay(attempt %d, hint %v) = %v, want %v", tc.attempt, tc.hint, got, tc.want)
		}
	}
}
