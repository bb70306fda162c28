package models

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNumberInRange(t *testing.T) {
	for _, tt := range []struct {
		n    string
		want bool
	}{
		{"0", true}, {"-0", true}, {"0.000e-99999", true}, {"42", true}, {"-1.5e10", true},
		{"1e308", true}, {"1e-320", true}, {"12345678901234567890123", true},
		{"1e309", false}, {"-1e999999", false}, {"1e-400", false}, {"1e-20000", false}, {"0.0001e-99999", false},
	} {
		if got := numberInRange(json.Number(tt.n)); got != tt.want {
			t.Errorf("numberInRange(%s) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

func TestFindNUL(t *testing.T) {
	for _, tt := range []struct {
		body string
		path string
		ok   bool
	}{
		{`{"a":"x"}`, "", false},
		{`{"a":"\\u0000"}`, "", false}, // an escaped backslash, not NUL
		{`{"a":{"b":["x","\u0000"]}}`, "a.b[1]", true},
		{`{"a\u0000":1}`, `a\u0000`, true},
		{`[{"z":1},{"y":"\u0000"}]`, "[1].y", true},
		{`"\u0000"`, "", true},
	} {
		var v any
		if err := json.Unmarshal([]byte(tt.body), &v); err != nil {
			t.Fatal(err)
		}
		fe, ok := FindNUL(v)
		if ok != tt.ok || (ok && fe.Field != tt.path) {
			t.Errorf("FindNUL(%s) = %q %v, want %q %v", tt.body, fe.Field, ok, tt.path, tt.ok)
		}
	}
}

func TestStorableText(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"plain", 0, "plain"},
		{"nul\x00byte", 20, "nul\uFFFDbyte"},
		{"bad\xffutf8", 20, "bad\uFFFDutf8"},
		{"run\xff\xfe\xfdend", 0, "run\uFFFDend"},
		{"ééé", 3, "é"}, // 2-byte characters are not split
		{"€€", 5, "€"},  // nor 3-byte ones
		{"a😀", 4, "a"},  // nor 4-byte ones
		{"\x00", 2, ""}, // U+FFFD takes 3 bytes
		{"a\xff", 3, "a"},
		{strings.Repeat("a", 5000), MaxResponseBody, strings.Repeat("a", MaxResponseBody)},
		{strings.Repeat("\x00", 5000), 0, strings.Repeat("\uFFFD", 5000)},
	} {
		got := StorableText(c.in, c.max)
		if got != c.want || !utf8.ValidString(got) || c.max > 0 && len(got) > c.max {
			t.Errorf("StorableText(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
		if again := StorableText(got, c.max); again != got {
			t.Errorf("StorableText of its own result %q = %q, want it unchanged", got, again)
		}
	}
}

func TestStorableHeaders(t *testing.T) {
	got := storableHeaders(Headers{"X-A\x00": {"v\xff", "w"}, "X-Empty": {}})
	want := Headers{"X-A\uFFFD": {"v\uFFFD", "w"}, "X-Empty": {}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("storableHeaders = %q, want %q", got, want)
	}
	if storableHeaders(nil) != nil {
		t.Error("storableHeaders(nil) is not nil")
	}
}
