package models

import (
	"errors"
	"time"
)

// Why a client's time value is refused; the texts read after the name of
// the field or parameter.
var (
	ErrTimeFormat = errors.New("must be an RFC 3339 date-time")
	ErrTimeRange  = errors.New("must be within years 0001 to 9999 once converted to UTC")
)

// ParseTime reads a time value sent by a client: an RFC 3339 date-time
// whose instant, in UTC, falls within years 1 to 9999. It returns the
// instant in UTC at microsecond precision, the form both stores keep.
//
// The bound is what every store and wire format holds alike: SQLite keeps
// times as UTC text, which orders as time only while the year has four
// digits; RFC 3339 and JSON write no other years; an offset can carry
// "0000-01-01T00:00:00+23:59" into year -1 and "9999-12-31T23:59:59-23:59"
// into year 10000. Truncating to microseconds, as PostgreSQL does, makes a
// comparison with stored times answer the same on both stores.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, ErrTimeFormat
	}
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return time.Time{}, ErrTimeRange
	}
	return t.Truncate(time.Microsecond), nil
}
