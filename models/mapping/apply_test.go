package mapping_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/recordhub/recordhub/models/mapping"
)

// decode reads a payload the way the inbound handler does.
func decode(t testing.TB, body string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

func mustCompile(t *testing.T, rules ...mapping.Rule) *mapping.Mapping {
	t.Helper()
	m, problems := mapping.Compile(rules)
	if problems != nil {
		t.Fatalf("Compile(%v) problems: %v", rules, problems)
	}
	return m
}

func TestApply(t *testing.T) {
	const order = `{
		"customer": {"email": "a@example.com", "address": {"city": "Oslo"}},
		"items": [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 1}],
		"first name": "Ada",
		"a.b": "dotted",
		"it's": "quoted",
		"say \"hi\"": "double",
		"note": null,
		"total": 12.50,
		"1": "one"
	}`
	tests := []struct {
		name    string
		source  string
		payload string
		want    any
		present bool
	}{
		{"nested keys", "$.payload.customer.address.city", order, "Oslo", true},
		{"bracketed payload", "$['payload'].customer.email", order, "a@example.com", true},
		{"array index", "$.payload.items[1].sku", order, "B2", true},
		{"negative index", "$.payload.items[-1].qty", order, json.Number("1"), true},
		{"bracketed key with space", "$.payload['first name']", order, "Ada", true},
		{"bracketed key with dot", `$.payload["a.b"]`, order, "dotted", true},
		{"escaped single quote", `$.payload['it\'s']`, order, "quoted", true},
		{"double quotes in single-quoted key", `$.payload['say "hi"']`, order, "double", true},
		{"digit key is a key", "$.payload.1", order, "one", true},
		{"number stays json.Number", "$.payload.total", order, json.Number("12.50"), true},
		{"object value", "$.payload.customer.address", order, map[string]any{"city": "Oslo"}, true},
		{"null is present", "$.payload.note", order, nil, true},
		{"absent key", "$.payload.missing", order, nil, false},
		{"below null", "$.payload.note.x", order, nil, false},
		{"index out of range", "$.payload.items[2].sku", order, nil, false},
		{"negative index out of range", "$.payload.items[-3]", order, nil, false},
		{"index into object", "$.payload.customer[0]", order, nil, false},
		{"key of array", "$.payload.items.sku", order, nil, false},
		{"index into string", "$.payload['first name'][0]", order, nil, false},
		{"key of string", "$.payload['first name'].x", order, nil, false},
		{"key of number", "$.payload.total.x", order, nil, false},
		{"index into number", "$.payload.total[0]", order, nil, false},
		{"whole body", "$.payload", `{"a": 1}`, map[string]any{"a": json.Number("1")}, true},
		{"whole body null", "$.payload", `null`, nil, true},
		{"whole body scalar", "$.payload", `"hi"`, "hi", true},
		{"top-level array", "$.payload[0].sku", `[{"sku": "A1"}]`, "A1", true},
		{"top-level array, key", "$.payload.sku", `[{"sku": "A1"}]`, nil, false},
		{"top-level scalar", "$.payload.a", `42`, nil, false},
		{"top-level string, index", "$.payload[0]", `"abc"`, nil, false},
		{"top-level null", "$.payload.a", `null`, nil, false},
		{"empty key", "$.payload['']", `{"": "empty"}`, "empty", true},
		{"unicode key", "$.payload['prénom']", `{"prénom": "Zoé"}`, "Zoé", true},
	}
	target := mapping.Target{Name: "f"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustCompile(t, mapping.Rule{Source: tt.source, Field: "f"})
			got, present := m.Apply(decode(t, tt.payload)).Get(target)
			if present != tt.present {
				t.Errorf("present = %v, want %v", present, tt.present)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("value (-got +want):\n%s", diff)
			}
		})
	}
}

func TestApplyValues(t *testing.T) {
	m := mustCompile(t,
		mapping.Rule{Source: "$.payload.email", Field: "email"},
		mapping.Rule{Source: "$.payload.name", Field: "name"},
		mapping.Rule{Source: "$.payload.phone", Field: "phone"},
		mapping.Rule{Source: "$.payload.source", Field: "custom_data.source"},
		mapping.Rule{Source: "$.payload.campaign", Field: "custom_data.utm campaign"},
		mapping.Rule{Source: "$.payload.ref", Field: "custom_data.ref"},
	)
	got := m.Apply(decode(t, `{"email": "a@example.com", "name": null, "source": "ads", "campaign": null}`))
	want := mapping.Values{
		Fields:     map[string]any{"email": "a@example.com", "name": nil},
		CustomData: map[string]any{"source": "ads", "utm campaign": nil},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Apply (-got +want):\n%s", diff)
	}

	empty := m.Apply(decode(t, `[]`))
	if empty.Fields == nil || empty.CustomData == nil {
		t.Errorf("Apply on a payload matching nothing = %#v, want empty non-nil maps", empty)
	}
}

func TestValuesGet(t *testing.T) {
	v := mapping.Values{
		Fields:     map[string]any{"email": "f", "gone": nil},
		CustomData: map[string]any{"email": "c"},
	}
	tests := []struct {
		target  mapping.Target
		want    any
		present bool
	}{
		{mapping.Target{Name: "email"}, "f", true},
		{mapping.Target{Custom: true, Name: "email"}, "c", true},
		{mapping.Target{Name: "gone"}, nil, true},
		{mapping.Target{Name: "other"}, nil, false},
		{mapping.Target{Custom: true, Name: "gone"}, nil, false},
	}
	for _, tt := range tests {
		got, present := v.Get(tt.target)
		if got != tt.want || present != tt.present {
			t.Errorf("Get(%v) = %v, %v; want %v, %v", tt.target, got, present, tt.want, tt.present)
		}
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		field   string
		want    mapping.Target
		wantErr string
	}{
		{field: "email", want: mapping.Target{Name: "email"}},
		{field: "_private2", want: mapping.Target{Name: "_private2"}},
		{field: "custom_data", want: mapping.Target{Name: "custom_data"}},
		{field: "custom_data.utm source", want: mapping.Target{Custom: true, Name: "utm source"}},
		{field: "custom_data.é", want: mapping.Target{Custom: true, Name: "é"}},
		{field: "custom_data." + strings.Repeat("é", 128), want: mapping.Target{Custom: true, Name: strings.Repeat("é", 128)}},
		{field: "", wantErr: "field name"},
		{field: "1abc", wantErr: "field name"},
		{field: "a-b", wantErr: "field name"},
		{field: strings.Repeat("a", 64), wantErr: "field name"},
		{field: "fields.x", wantErr: "field name"},
		{field: "Custom_data.x", wantErr: "field name"},
		{field: "custom_data.", wantErr: "1-128 characters"},
		{field: "custom_data." + strings.Repeat("a", 129), wantErr: "1-128 characters"},
		{field: "custom_data.a.b", wantErr: "must not contain '.'"},
		{field: "custom_data.a\x00", wantErr: "control characters"},
		{field: "custom_data.\xff", wantErr: "UTF-8"},
	}
	for _, tt := range tests {
		got, err := mapping.ParseTarget(tt.field)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseTarget(%q) error = %v, want one containing %q", tt.field, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tt.field, err)
			continue
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("ParseTarget(%q) (-got +want):\n%s", tt.field, diff)
		}
		if got.String() != tt.field {
			t.Errorf("ParseTarget(%q).String() = %q, want the field as written", tt.field, got.String())
		}
	}
}

func TestCompileRefusesSource(t *testing.T) {
	tests := []struct {
		source string
		want   string // part of the message
	}{
		{"", "is required"},
		{"$.payload.*", "wildcard"},
		{"$.payload[*]", "wildcard"},
		{"$.payload.a*", "wildcard"},
		{"$.payload..x", "recursive descent"},
		{"$.payload[0,1]", "union"},
		{"$.payload['a','b']", "union"},
		{"$.payload[0:2]", "slice"},
		{"$.payload[:1]", "slice"},
		{"$.payload[?(@.a==1)]", "filter"},
		{"$.payload[(@.length-1)]", "not a valid JSONPath"}, // ojg parses scripts only when told how
		{"$.other.x", "must start with $.payload"},
		{"$.payloadx", "must start with $.payload"},
		{"$['payload x']", "must start with $.payload"},
		{"$", "must start with $.payload"},
		{"$[0]", "must start with $.payload"},
		{"$.*.payload", "must start with $.payload"},
		{"payload.x", "must start with $.payload"},
		{"@.payload.x", "must start with $.payload"},
		{"$.payload.a b", "not a valid JSONPath"},
		{"$.payload.", "not a valid JSONPath"},
		{"$.payload[]", "not a valid JSONPath"},
		{"$.payload['a", "not a valid JSONPath"},
		{`$.payload['a\`, "not a valid JSONPath"},
		{"$.payload.'x'", "not a valid JSONPath"},
		{"$.payload[9999999999]", "at most 9 digits"},
		{"$.payload[18446744073709551615]", "at most 9 digits"},
		{"$.payload[ -18446744073709551615 ]", "at most 9 digits"},
		{"$.payload.\x00", "control characters"},
		{"$.payload.\xff", "UTF-8"},
		{"$.payload." + strings.Repeat("a", 503), "at most 512 bytes"},
	}
	for _, tt := range tests {
		m, problems := mapping.Compile([]mapping.Rule{{Source: tt.source, Field: "f"}})
		if m != nil || len(problems) != 1 || problems[0].Rule != 0 || problems[0].Attr != "source" ||
			!strings.Contains(problems[0].Message, tt.want) {
			t.Errorf("Compile(source %q) = %v, %v; want one source problem containing %q", tt.source, m, problems, tt.want)
		}
	}
}

func TestCompileAcceptsSource(t *testing.T) {
	for _, source := range []string{
		"$.payload",
		"$['payload']",
		`$["payload"]['a']`,
		"$.payload." + strings.Repeat("a", 502),
		"$.payload[999999999]",
		"$.payload[000000001]",
		"$.payload[-1]",
		"$.payload[ 0 ]",
		"$.payload['[12345678901]']",
		`$.payload["it's [99999999999]"]`,
		`$.payload['\'[99999999999]']`,
	} {
		if _, problems := mapping.Compile([]mapping.Rule{{Source: source, Field: "f"}}); problems != nil {
			t.Errorf("Compile(source %q) problems: %v", source, problems)
		}
	}
}

func TestCompileProblems(t *testing.T) {
	tooMany := make([]mapping.Rule, mapping.MaxRules+1)
	for i := range tooMany {
		tooMany[i] = mapping.Rule{Source: "$.payload.x", Field: "custom_data.k" + strings.Repeat("x", i)}
	}
	tests := []struct {
		name  string
		rules []mapping.Rule
		want  []mapping.Problem // Message compared by substring
	}{
		{
			name:  "empty list",
			rules: nil,
		},
		{
			name: "bad fields",
			rules: []mapping.Rule{
				{Source: "$.payload.a", Field: "1abc"},
				{Source: "$.payload.a", Field: "custom_data."},
				{Source: "$.payload.a", Field: "custom_data.a.b"},
				{Source: "$.payload.a", Field: "fields.x"},
				{Source: "$.payload.a", Field: ""},
			},
			want: []mapping.Problem{
				{Rule: 0, Attr: "field", Message: "field name"},
				{Rule: 1, Attr: "field", Message: "1-128 characters"},
				{Rule: 2, Attr: "field", Message: "'.'"},
				{Rule: 3, Attr: "field", Message: "field name"},
				{Rule: 4, Attr: "field", Message: "field name"},
			},
		},
		{
			name: "duplicate target",
			rules: []mapping.Rule{
				{Source: "$.payload.a", Field: "email"},
				{Source: "$.payload.b", Field: "custom_data.email"},
				{Source: "$.payload.c", Field: "email"},
				{Source: "$.payload.d", Field: "custom_data.email"},
			},
			want: []mapping.Problem{
				{Rule: 2, Attr: "field", Message: "rule 0 already writes email"},
				{Rule: 3, Attr: "field", Message: "rule 1 already writes custom_data.email"},
			},
		},
		{
			name: "both attributes of one rule, in rule order",
			rules: []mapping.Rule{
				{Source: "$.payload.a", Field: "ok"},
				{Source: "$.payload..a", Field: "9"},
			},
			want: []mapping.Problem{
				{Rule: 1, Attr: "source", Message: "recursive descent"},
				{Rule: 1, Attr: "field", Message: "field name"},
			},
		},
		{
			name:  "too many rules",
			rules: tooMany,
			want:  []mapping.Problem{{Rule: mapping.MaxRules, Attr: "field", Message: "at most 100 rules"}},
		},
		{
			name:  "too many rules and a bad one",
			rules: append([]mapping.Rule{{Source: "$.x", Field: "a"}}, tooMany...),
			want: []mapping.Problem{
				{Rule: 0, Attr: "source", Message: "$.payload"},
				{Rule: mapping.MaxRules, Attr: "field", Message: "at most 100 rules"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, got := mapping.Compile(tt.rules)
			if diff := cmp.Diff(where(got), where(tt.want), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("problems (-got +want):\n%s", diff)
			}
			for i, p := range got {
				if !strings.Contains(p.Message, tt.want[i].Message) {
					t.Errorf("problem %d message = %q, want one containing %q", i, p.Message, tt.want[i].Message)
				}
			}
			if (m == nil) != (len(tt.want) > 0) {
				t.Errorf("mapping = %v, want nil exactly when there are problems", m)
			}
		})
	}
}

// where keeps what locates each problem, for comparing lists whose messages
// are checked by substring.
func where(problems []mapping.Problem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, fmt.Sprintf("rules[%d].%s", p.Rule, p.Attr))
	}
	return out
}

func TestMappingAccessors(t *testing.T) {
	rules := []mapping.Rule{
		{Source: "$.payload.email", Field: "email"},
		{Source: "$.payload['utm source']", Field: "custom_data.utm"},
	}
	m := mustCompile(t, rules...)
	rules[0].Field = "changed" // Compile keeps its own copy.

	got := m.Rules()
	want := []mapping.Rule{
		{Source: "$.payload.email", Field: "email"},
		{Source: "$.payload['utm source']", Field: "custom_data.utm"},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Rules (-got +want):\n%s", diff)
	}
	got[0].Source = "changed" // Rules returns a copy.
	if m.Rules()[0].Source != "$.payload.email" {
		t.Errorf("Rules shares its slice with the caller")
	}
	for target, want := range map[mapping.Target]int{
		{Name: "email"}:               0,
		{Custom: true, Name: "utm"}:   1,
		{Custom: true, Name: "email"}: -1,
		{Name: "utm"}:                 -1,
	} {
		if got := m.RuleFor(target); got != want {
			t.Errorf("RuleFor(%v) = %d, want %d", target, got, want)
		}
	}
}

// TestApplyDeep guards the evaluation of a long path against a payload nested
// as deep as encoding/json allows a body to be.
func TestApplyDeep(t *testing.T) {
	const depth = 9000
	body := strings.Repeat(`{"a":`, depth) + `"deep"` + strings.Repeat("}", depth)
	payload := decode(t, body)

	// The longest valid source: as many ".a" as fit.
	source := "$.payload" + strings.Repeat(".a", (512-len("$.payload"))/2)
	m := mustCompile(t, mapping.Rule{Source: source, Field: "f"})
	got, present := m.Apply(payload).Get(mapping.Target{Name: "f"})
	if !present {
		t.Fatalf("Apply(%d-deep payload) found nothing", depth)
	}
	if _, ok := got.(map[string]any); !ok {
		t.Errorf("Apply(%d-deep payload) = %T, want an object", depth, got)
	}

	arrays := decode(t, strings.Repeat("[", depth)+strings.Repeat("]", depth))
	m = mustCompile(t, mapping.Rule{Source: "$.payload" + strings.Repeat("[0]", 100), Field: "f"})
	if _, present := m.Apply(arrays).Get(mapping.Target{Name: "f"}); !present {
		t.Errorf("Apply(%d-deep arrays) found nothing", depth)
	}
}
