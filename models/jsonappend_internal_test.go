package models

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestMarshalObject: a record's fields and custom data are encoded exactly
// as json.Marshal encodes them, whatever they hold, and what json.Marshal
// refuses is refused with its error.
func TestMarshalObject(t *testing.T) {
	awkward := []string{
		"", "plain", `say "hi"`, `back\slash`, "tab\there", "nl\ncr\r", "\b\f\v\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "line\u2028para\u2029end", "héllo wörld ✓ 日本 🎉", "bad \xff utf-8 \xc3",
	}
	deep := map[string]any{}
	for range maxAppendDepth + 5 {
		deep = map[string]any{"d": deep}
	}
	objects := []map[string]any{nil, {}, deep}
	for _, s := range awkward {
		objects = append(objects, map[string]any{
			s: s, "b" + s: s, "a" + s: []any{s, nil, true, false, json.Number(""), json.Number("-0.5e+10")},
			"nested": map[string]any{s: map[string]any{}, "list": []any{}, "nil list": []any(nil), "nil map": map[string]any(nil)},
			"object": JSONObject{s: JSONObject(nil)}, "numbers": []any{1, int64(-2), 3.5, 1e21, 1e-7, float32(0.1), uint8(7)},
			"others": []any{time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), []string{s}, map[string]int{s: 1}, json.RawMessage(` {"a" : "<"} `)},
		})
	}
	for i, m := range objects {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := marshalObject(m); err != nil || string(got) != string(want) {
			t.Errorf("object %d: marshalObject = %s, %v\nwant %s", i, got, err, want)
		}
	}
	for _, bad := range []any{json.Number("01"), json.Number("1."), json.Number("1e"), json.Number("+1"), json.Number("NaN"), math.Inf(1), func() {}} {
		m := map[string]any{"ok": "x", "bad": []any{bad}}
		_, want := json.Marshal(m)
		if _, err := marshalObject(m); err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("marshalObject(%v) = %v, want json.Marshal's error %v", m, err, want)
		}
	}
	for _, n := range []string{"0", "-0", "12", "1.5", "1e5", "1E+5", "-1.25e-3", "1.", ".5", "1e", "1e+", "--1", "0x1", "00", "1.e5"} {
		_, err := json.Marshal(json.Number(n))
		if validJSONNumber(n) != (err == nil) {
			t.Errorf("validJSONNumber(%q) = %v, json.Marshal's error %v", n, validJSONNumber(n), err)
		}
	}
}
