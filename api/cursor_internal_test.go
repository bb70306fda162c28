package api

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
)

// TestCursorRoundTrip: a cursor reads back as the position it was made
// of, in the list it was made for, and as nothing else: every edit of one
// byte, every cut, and any other list refuse it.
func TestCursorRoundTrip(t *testing.T) {
	for _, p := range []models.Position{
		{At: time.Date(2026, 11, 24, 3, 42, 49, 123456789, time.UTC), ID: "whd_01jq7z8k9x0000000000000000"},
		{At: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), ID: "x"},
		{At: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), ID: "log_é"},
		{At: time.Date(2020, 3, 1, 12, 0, 0, 0, time.FixedZone("", 5*3600)), ID: "ibe_1"},
	} {
		c := encodeCursor(listDeliveries, p)
		got, err := decodeCursor(listDeliveries, c)
		if err != nil {
			t.Fatalf("decode %q of %v: %v", c, p, err)
		}
		if !got.At.Equal(p.At) || got.ID != p.ID {
			t.Errorf("decode %q: %v, want %v", c, got, p)
		}
		if _, err := decodeCursor(listAccessLogs, c); err == nil {
			t.Errorf("a deliveries cursor %q was read as an access-log cursor", c)
		}
		raw, _ := base64.RawURLEncoding.DecodeString(c)
		for i := range raw {
			for _, flip := range []byte{0x01, 0x80, 0xff} {
				edited := append([]byte(nil), raw...)
				edited[i] ^= flip
				if got, err := decodeCursor(listDeliveries, base64.RawURLEncoding.EncodeToString(edited)); err == nil {
					t.Errorf("byte %d of %q xor %#x read as %v", i, c, flip, got)
				}
			}
			if _, err := decodeCursor(listDeliveries, base64.RawURLEncoding.EncodeToString(raw[:i])); err == nil {
				t.Errorf("%q cut to %d bytes was read", c, i)
			}
		}
	}
}

// TestCursorRefusesTimesNoRowHas: a well-formed cursor (its checksum
// right) whose time is outside years 1 to 9999 is refused, not compared.
func TestCursorRefusesTimesNoRowHas(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(0, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		c := encodeCursor(listInboundEvents, models.Position{At: at, ID: "ibe_1"})
		if got, err := decodeCursor(listInboundEvents, c); err == nil {
			t.Errorf("a cursor at %v was read as %v", at, got)
		}
	}
}
