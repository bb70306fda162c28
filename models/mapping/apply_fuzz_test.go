package mapping_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models/mapping"
)

// FuzzCompileApply checks that no source compiles into a rule that panics on
// some payload, and that what compiles compiles again from Rules.
func FuzzCompileApply(f *testing.F) {
	for _, seed := range []struct {
		source  string
		payload string
	}{
		{"$.payload.a", `{"a":1}`},
		{"$.payload", `null`},
		{"$.payload[0].sku", `[{"sku":"A1"}]`},
		{"$.payload.items[-1]", `{"items":[1,2,3]}`},
		{"$.payload['first name']", `{"first name":"Ada"}`},
		{`$.payload["a.b"].c`, `{"a.b":{"c":null}}`},
		{"$.payload.a[0]", `{"a":"string"}`},
		{"$.payload..a", `{"a":{"a":1}}`},
		{"$.payload[?(@.a==1)]", `[{"a":1}]`},
		{"$.payload[18446744073709551615]", `[1]`},
		{`$.payload['\u00e9']`, `{"é":true}`},
	} {
		f.Add(seed.source, []byte(seed.payload))
	}
	// Shapes every compiled rule meets whatever the fuzzed payload is.
	shapes := []string{`null`, `1`, `"s"`, `[]`, `{}`, `[[{"a":[null]}]]`, `{"a":{"b":[1,{"c":"d"}]}}`}
	target := mapping.Target{Name: "f"}
	f.Fuzz(func(t *testing.T, source string, payload []byte) {
		rules := []mapping.Rule{{Source: source, Field: "f"}}
		m, problems := mapping.Compile(rules)
		if problems != nil {
			if m != nil || len(problems) != 1 || problems[0].Attr != "source" || problems[0].Message == "" {
				t.Fatalf("Compile(%q) = %v, %v; want nil and one source problem", source, m, problems)
			}
			return
		}
		again, problems := mapping.Compile(m.Rules())
		if problems != nil {
			t.Fatalf("Compile(Rules()) of %q: %v", source, problems)
		}
		if diff := cmp.Diff(again.Rules(), rules); diff != "" {
			t.Fatalf("Rules (-got +want):\n%s", diff)
		}

		payloads := [][]byte{payload}
		for _, s := range shapes {
			payloads = append(payloads, []byte(s))
		}
		for _, p := range payloads {
			d := json.NewDecoder(bytes.NewReader(p))
			d.UseNumber()
			var v any
			if d.Decode(&v) != nil {
				continue
			}
			values := m.Apply(v)
			if len(values.CustomData) != 0 || len(values.Fields) > 1 {
				t.Fatalf("Apply(%q) on %s = %v, want at most field f", source, p, values)
			}
			got, present := values.Get(target)
			gotAgain, presentAgain := again.Apply(v).Get(target)
			if present != presentAgain || !cmp.Equal(got, gotAgain) {
				t.Fatalf("Apply(%q) on %s is not repeatable: %v, %v then %v, %v", source, p, got, present, gotAgain, presentAgain)
			}
		}
	})
}
