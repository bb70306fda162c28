package models

import (
	"encoding/json"
	"testing"
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
