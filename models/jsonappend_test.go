package models_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
)

// awkwardStrings are strings whose JSON encoding/json writes with escapes
// of every kind it has.
var awkwardStrings = []string{
	"", "plain", `say "hi"`, `back\slash`, "tab\there", "nl\ncr\r", "\b\f\v\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "line\u2028para\u2029end", "\u2027\u202a", "héllo wörld ✓ 日本 🎉",
	"bad \xff utf-8 \xc3", "\xe2\x80", "trailing \xf0\x9f\x8e", "\ufffd", "a<b>c&d\"e\\f",
}

// TestAppendJSONString: a string is written exactly as json.Marshal
// writes it, for every escape it makes and every byte it meets.
func TestAppendJSONString(t *testing.T) {
	check := func(s string) {
		t.Helper()
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := models.AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendJSONString(%q) = %s, want x%s", s, got, want)
		}
	}
	for _, s := range awkwardStrings {
		check(s)
	}
	var every strings.Builder
	for c := range 256 {
		check(string([]byte{byte(c)}))
		check("a" + string([]byte{byte(c)}) + "é")
		every.WriteByte(byte(c))
	}
	check(every.String())
	for r := rune(0x80); r < 0x3000; r++ {
		check(string(r))
	}
}

// TestAppendJSONTime: a time is written as json.Marshal writes it, in its
// own zone, and one json.Marshal refuses is refused.
func TestAppendJSONTime(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	west := time.FixedZone("west", -(23*3600 + 59*60))
	base := time.Date(2026, 12, 1, 23, 45, 6, 789000000, time.UTC)
	for _, tm := range []time.Time{
		base, base.Truncate(time.Second), base.Add(123 * time.Nanosecond), base.Add(100 * time.Microsecond),
		base.In(east), base.In(west), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2026, 3, 1, 0, 0, 0, 1, time.FixedZone("odd", 3600+7)), {},
	} {
		want, err := json.Marshal(tm)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := models.AppendJSONTime([]byte("x"), tm)
		if !ok || string(got) != "x"+string(want) {
			t.Errorf("AppendJSONTime(%v) = %s, %v, want x%s", tm, got, ok, want)
		}
	}
	for _, tm := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		base.In(time.FixedZone("far", 24*3600)), base.In(time.FixedZone("far west", -25*3600)),
	} {
		if _, err := json.Marshal(tm); err == nil {
			t.Fatalf("json.Marshal(%v) took the time", tm)
		}
		if got, ok := models.AppendJSONTime([]byte("x"), tm); ok || string(got) != "x" {
			t.Errorf("AppendJSONTime(%v) = %s, %v, want x, false as json.Marshal refuses it", tm, got, ok)
		}
	}
}

// FuzzAppendJSONString: whatever the string, it is written exactly as
// json.Marshal writes it.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range awkwardStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := models.AppendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
