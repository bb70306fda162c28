package eventschema

import (
	"math"

	"github.com/recordhub/recordhub/models"
)

// urlPattern is what every url value starts with: the store takes only
// absolute http and https URLs with a host, the scheme in any case.
const urlPattern = "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]"

// Value returns the schema of a value of field f as record bodies carry it.
// A field without a value is absent from the record, never null.
func Value(f models.Field) Object {
	switch f.Type {
	case models.TypeString, models.TypeText:
		return obj("type", "string")
	case models.TypeInteger:
		// Written as an integer literal within int64.
		return obj("type", "integer", "minimum", int64(math.MinInt64), "maximum", int64(math.MaxInt64))
	case models.TypeNumber:
		return obj("type", "number")
	case models.TypeBoolean:
		return obj("type", "boolean")
	case models.TypeDatetime:
		return obj("type", "string", "format", "date-time",
			"description", "An RFC 3339 date-time, as it was written (years 1 to 9999).")
	case models.TypeEmail:
		return obj("type", "string", "format", "email")
	case models.TypeURL:
		return obj("type", "string", "format", "uri", "pattern", urlPattern,
			"description", "An absolute http or https URL.")
	case models.TypeEnum:
		return obj("type", "string", "enum", f.Options)
	case models.TypeStatus:
		return obj("type", "string", "enum", f.States, "description", "A state of the status field.")
	case models.TypeJSON:
		// anyOf rather than a list of types: strict validators (ajv)
		// warn about the list.
		var anyOf []Object
		for _, t := range []string{"object", "array", "string", "number", "boolean"} {
			anyOf = append(anyOf, obj("type", t))
		}
		return obj("anyOf", anyOf, "description", "Any JSON value but null.")
	}
	// ValidateModule admits no other type; say nothing rather than wrong.
	return obj()
}

// nullable is s or null: a value before or after a change, null where the
// field had none.
func nullable(s Object) Object {
	return obj("anyOf", []Object{s, obj("type", "null")})
}

// fieldsSchema is the schema of record.fields.
func fieldsSchema(m *models.Module) Object {
	props := make(Object, 0, len(m.Fields))
	var required []string
	for _, f := range m.Fields {
		props = append(props, Member{Key: f.Name, Value: Value(f)})
		if f.Required {
			required = append(required, f.Name)
		}
	}
	o := obj("title", "RecordFields", "type", "object",
		"description", "The record's values by field name; a field without a value is absent. A record keeps a field removed from the module until its next write, hence other keys.",
		"properties", props)
	if len(required) > 0 {
		o = append(o, Member{Key: "required", Value: required})
	}
	return append(o, Member{Key: "additionalProperties", Value: true})
}

// change is the schema of a value change, {"from", "to"}, of a value of
// schema s.
func change(s Object) Object {
	return obj("type", "object", "required", []string{"from", "to"},
		"properties", obj("from", nullable(s), "to", nullable(s)),
		"additionalProperties", false)
}
