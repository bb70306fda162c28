package eventschema_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/eventschema"
)

// Every field type: values the store takes validate, and values of another
// type, outside the options or outside int64 do not (formats asserted).
func TestValue(t *testing.T) {
	cases := []struct {
		field models.Field
		good  []string // JSON values
		bad   []string
	}{
		{models.Field{Type: models.TypeString}, []string{`""`, `"a"`}, []string{`1`, `true`, `null`, `["a"]`}},
		{models.Field{Type: models.TypeText}, []string{`"long\ntext"`}, []string{`{}`, `null`}},
		{models.Field{Type: models.TypeInteger}, []string{`0`, `-7`, `9223372036854775807`, `-9223372036854775808`},
			[]string{`1.5`, `"1"`, `9223372036854775808`, `null`}},
		{models.Field{Type: models.TypeNumber}, []string{`0`, `-0.5`, `1.5e3`}, []string{`"1"`, `false`, `null`}},
		{models.Field{Type: models.TypeBoolean}, []string{`true`, `false`}, []string{`0`, `"true"`, `null`}},
		{models.Field{Type: models.TypeDatetime}, []string{`"2030-01-02T03:04:05Z"`, `"2030-01-02T03:04:05.123456+02:00"`},
			[]string{`"2030-01-02"`, `"yesterday"`, `1700000000`, `null`}},
		{models.Field{Type: models.TypeEmail}, []string{`"a@example.com"`, `"a+b@x-y.example"`}, []string{`"nobody"`, `5`, `null`}},
		{models.Field{Type: models.TypeURL}, []string{`"https://example.com/a?b=c"`, `"HTTP://example.com"`},
			[]string{`"ftp://example.com"`, `"example.com"`, `"/relative"`, `null`}},
		{models.Field{Type: models.TypeEnum, Options: []string{"s", "m"}}, []string{`"s"`, `"m"`}, []string{`"l"`, `"S"`, `1`, `null`}},
		{models.Field{Type: models.TypeStatus, States: []string{"new", "paid"}}, []string{`"new"`}, []string{`"shipped"`, `true`, `null`}},
		{models.Field{Type: models.TypeJSON}, []string{`{"a": [1]}`, `[1, "two"]`, `"s"`, `1`, `false`}, []string{`null`}},
	}
	for _, c := range cases {
		t.Run(c.field.Type, func(t *testing.T) {
			c.field.Name = "f"
			v := newValidator(t, "urn:test:value", valueDoc(eventschema.Value(c.field)), true)
			m := &models.Module{Fields: models.FieldList{c.field}}
			for _, good := range c.good {
				if errs := m.ValidateRecordFields(map[string]any{"f": jsonValue(t, good)}, nil); len(errs) > 0 {
					t.Fatalf("the store refuses %s: %v (a case to fix)", good, errs)
				}
				if err := v.check("urn:test:value", []byte(good)); err != nil {
					t.Errorf("%s: %v", good, err)
				}
			}
			for _, bad := range c.bad {
				if err := v.check("urn:test:value", []byte(bad)); err == nil {
					t.Errorf("%s validates", bad)
				}
			}
		})
	}
}

// A format is an annotation: a value the store takes that a strict format
// check refuses still validates against the document as draft 2020-12
// reads it by default, as the package comment says.
func TestValueFormatsAreAnnotations(t *testing.T) {
	cases := []struct {
		typ, value string
	}{
		{models.TypeDatetime, `"2030-01-02T03:04:05,5Z"`}, // Go reads a comma before the fraction
		{models.TypeEmail, `"ü@example.com"`},             // net/mail takes UTF-8
		{models.TypeEmail, `"a@x_y.example"`},
	}
	for _, c := range cases {
		f := models.Field{Name: "f", Type: c.typ}
		m := &models.Module{Fields: models.FieldList{f}}
		if errs := m.ValidateRecordFields(map[string]any{"f": jsonValue(t, c.value)}, nil); len(errs) > 0 {
			t.Fatalf("the store refuses %s: %v (the case no longer shows anything)", c.value, errs)
		}
		doc := valueDoc(eventschema.Value(f))
		if err := newValidator(t, "urn:test:value", doc, false).check("urn:test:value", []byte(c.value)); err != nil {
			t.Errorf("%s %s: %v", c.typ, c.value, err)
		}
		if err := newValidator(t, "urn:test:value", doc, true).check("urn:test:value", []byte(c.value)); err == nil {
			t.Errorf("%s %s passes a strict format check: the package comment's example is wrong", c.typ, c.value)
		}
	}
}

// jsonValue decodes a value as the API does (numbers as json.Number).
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", s, err))
	}
	return v
}
