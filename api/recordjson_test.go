package api

import (
	"encoding/json"
	"testing"
)

// FuzzAppendString: whatever the string, the output is a JSON string that
// decodes to it (invalid UTF-8 becoming U+FFFD, as encoding/json does).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "rec_01abc", `quote " and \ backslash`, "tab\tnew\nline\x00", "ünï\u2028cödé", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil {
			t.Fatalf("appendString(%q) is not JSON: %v", s, err)
		}
		want, _ := json.Marshal(s)
		var wantS string
		json.Unmarshal(want, &wantS)
		if got != wantS {
			t.Fatalf("appendString(%q) decodes to %q, want %q", s, got, wantS)
		}
	})
}
