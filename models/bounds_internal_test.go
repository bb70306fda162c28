package models

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEncodedAtMost: the walk that spares most records an encoding never
// counts fewer bytes than json.Marshal writes, whatever the strings hold.
func TestEncodedAtMost(t *testing.T) {
	for _, v := range []map[string]any{
		{},
		{"a": nil, "b": true, "c": false, "d": json.Number("-1.5e300"), "e": 42, "f": 1.25},
		{"<>&": "<script>&amp;</script>", "ctl": "\x00\x01\x1b\x7f", "bad": "\xff\xfe", "sep": "\u2028\u2029"},
		{"nested": map[string]any{"list": []any{"x", []any{}, map[string]any{"y": "\"\\"}}}},
		{"long": strings.Repeat("<", 1000)},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := encodedAtMost(v); got < len(b) {
			t.Errorf("encodedAtMost(%v) = %d, below the %d bytes encoded", v, got, len(b))
		}
	}
	if got := encodedAtMost(map[string]any{"x": []string{"a"}}); got <= MaxRecordJSONBytes {
		t.Errorf("a type the walk does not know counts %d, want it encoded (above %d)", got, MaxRecordJSONBytes)
	}
}
