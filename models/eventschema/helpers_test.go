package eventschema_test

// The package's test helpers.

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/recordhub/recordhub/models/eventschema"
)

// validator compiles JSON Schema documents with
// github.com/santhosh-tekuri/jsonschema/v6.
type validator struct {
	t *testing.T
	c *jsonschema.Compiler
}

// newValidator returns a validator of doc, whose $id is id. With
// strictFormats, "format" is asserted (date-time, email, uri); without, it
// is an annotation, as draft 2020-12 has it by default.
func newValidator(t *testing.T, id string, doc any, strictFormats bool) *validator {
	t.Helper()
	c := jsonschema.NewCompiler()
	if strictFormats {
		c.AssertFormat()
	}
	if err := c.AddResource(id, decode(t, marshal(t, doc))); err != nil {
		t.Fatalf("add the document: %v", err)
	}
	return &validator{t: t, c: c}
}

// check validates the JSON body against the schema at url (the document's
// $id and a fragment).
func (v *validator) check(url string, body []byte) error {
	v.t.Helper()
	sch, err := v.c.Compile(url)
	if err != nil {
		v.t.Fatalf("compile %s: %v", url, err)
	}
	return sch.Validate(decode(v.t, body))
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decode reads JSON as the validator wants it (numbers as json.Number).
func decode(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// valueDoc is a document whose root is the schema of one field's values.
func valueDoc(s eventschema.Object) eventschema.Object {
	return append(eventschema.Object{{Key: "$schema", Value: eventschema.Dialect}}, s...)
}
