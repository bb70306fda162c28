package models_test

import (
	"errors"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
)

// TestParseTime: a client's time is read in UTC at microsecond precision,
// and refused when it is no RFC 3339 date-time or its instant in UTC falls
// outside years 1..9999, offsets included.
func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr error
	}{
		{"0001-01-01T00:00:00Z", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{"9999-12-31T23:59:59Z", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), nil},
		{"9999-12-31T23:59:59.999999999Z", time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), nil},
		{"0001-01-01T23:59:00+23:59", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{"2026-11-24T05:30:00.1234567+05:30", time.Date(2026, 11, 24, 0, 0, 0, 123456000, time.UTC), nil},
		{"0000-01-01T00:00:00+23:59", time.Time{}, models.ErrTimeRange},
		{"0000-12-31T23:59:59Z", time.Time{}, models.ErrTimeRange},
		{"0001-01-01T00:00:00+00:01", time.Time{}, models.ErrTimeRange},
		{"9999-12-31T23:59:59-23:59", time.Time{}, models.ErrTimeRange},
		{"9999-12-31T23:59:59-00:01", time.Time{}, models.ErrTimeRange},
		{"10000-01-01T00:00:00Z", time.Time{}, models.ErrTimeFormat},
		{"-0001-01-01T00:00:00Z", time.Time{}, models.ErrTimeFormat},
		{"2026-11-24", time.Time{}, models.ErrTimeFormat},
		{"yesterday", time.Time{}, models.ErrTimeFormat},
	} {
		got, err := models.ParseTime(tc.in)
		if !errors.Is(err, tc.wantErr) || !got.Equal(tc.want) || (err == nil && got.Location() != time.UTC) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
