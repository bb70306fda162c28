package models

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStorableText(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"nul\x00byte", 20, "nul\uFFFDbyte"},
		{"bad\xffutf8", 20, "bad\uFFFDutf8"},
		{"ééé", 3, "é"}, // 2-byte characters are not split
		{strings.Repeat("a", 5000), MaxResponseBody, strings.Repeat("a", MaxResponseBody)},
	} {
		got := storableText(c.in, c.max)
		if got != c.want || !utf8.ValidString(got) || len(got) > c.max {
			t.Errorf("storableText(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
