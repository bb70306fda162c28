package models

import (
	"encoding/json"
	"fmt"

	"github.com/recordhub/recordhub/models/mapping"
)

// Bounds of what the API stores, in one place: each is checked where the
// value comes in, and refused with a 422 naming the field and the bound,
// on SQLite and PostgreSQL alike. api/README.md lists them for
// integrators and api/openapi.yaml states them on each property.
const (
	// MaxURLBytes bounds a webhook endpoint's URL; browsers and common
	// servers handle URLs of this length.
	MaxURLBytes = 2048
	// MaxDescriptionBytes bounds an endpoint's description.
	MaxDescriptionBytes = 500
	// MaxNameBytes bounds the name of a module, a key or a tenant.
	MaxNameBytes = 200
	// MaxFilterConditions bounds an endpoint's content filter.
	MaxFilterConditions = 20
	// MaxFilterInValues bounds the values of one in condition, in a
	// filter[<field>][in] list and in an endpoint's filter.
	MaxFilterInValues = 100
	// MaxFilterValueBytes bounds the value of one filter condition.
	MaxFilterValueBytes = 1024
	// MaxFilterBytes bounds a whole filter, encoded as JSON.
	MaxFilterBytes = 8 << 10
	// MaxJSONDepth bounds how deep a value of a record's fields or
	// custom_data nests objects and arrays (a scalar nests 0 levels, [1]
	// one). SQLite's JSON functions read at most 1,000 levels of a
	// document; the bound keeps every stored record far within them.
	MaxJSONDepth = 64
	// MaxRecordJSONBytes bounds a record's fields, and its custom_data,
	// each encoded as JSON: what one request body can carry. Merge PATCHes
	// cannot grow either beyond it.
	MaxRecordJSONBytes = 1 << 20

	// MaxModuleFields bounds a module's field list.
	MaxModuleFields = 200

	// MaxEndpointHeaders is how many custom headers an endpoint may have.
	MaxEndpointHeaders = 20
	// MaxHeaderNameBytes bounds one custom header's name.
	MaxHeaderNameBytes = 256
	// MaxHeaderValueBytes bounds one custom header's value.
	MaxHeaderValueBytes = 1024
	// MaxHeadersBytes bounds the names and values of all of an endpoint's
	// custom headers together, so that with recordhub's own headers a
	// request stays within the 8 KiB that common servers accept.
	MaxHeadersBytes = 4 << 10

	// MaxMatchFields bounds an inbound webhook's match fields.
	MaxMatchFields = 10
	// MaxMappingRules and MaxMappingSourceBytes bound an inbound webhook's
	// mapping: its number of rules, and each rule's JSONPath. The mapping
	// package holds their values, as it imports nothing of the store.
	MaxMappingRules       = mapping.MaxRules
	MaxMappingSourceBytes = mapping.MaxSourceBytes
)

// tooLong says that a value of n bytes is over its bound of max.
func tooLong(max, n int) string {
	return fmt.Sprintf("must be at most %d bytes, got %d", max, n)
}

// oversized names field when m, a record's fields or custom_data, would
// encode to more than MaxRecordJSONBytes. Most records are far smaller
// than the bound: they are measured by a walk, and encoded only when the
// walk cannot rule them out.
func oversized(field string, m map[string]any) []FieldError {
	if encodedAtMost(m) <= MaxRecordJSONBytes {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil || len(b) <= MaxRecordJSONBytes {
		return nil // what cannot be encoded is refused where it is written
	}
	return []FieldError{{Field: field, Message: fmt.Sprintf("must encode to at most %d bytes of JSON, got %d", MaxRecordJSONBytes, len(b))}}
}

// encodedAtMost returns at least as many bytes as v, a decoded JSON value,
// encodes to, or any number above MaxRecordJSONBytes once the count passes
// it: json.Marshal writes at most six bytes for each byte of a string
// (\u003c for <, \ufffd for an invalid byte).
func encodedAtMost(v any) int {
	switch v := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case string:
		return 2 + 6*len(v)
	case json.Number:
		return len(v)
	case int, int64, float64:
		return 24
	case map[string]any:
		n := 2 + len(v)
		for k, e := range v {
			if n += 3 + 6*len(k) + encodedAtMost(e); n > MaxRecordJSONBytes {
				return n
			}
		}
		return n
	case []any:
		n := 2 + len(v)
		for _, e := range v {
			if n += encodedAtMost(e); n > MaxRecordJSONBytes {
				return n
			}
		}
		return n
	}
	return MaxRecordJSONBytes + 1 // unknown to the walk: encode it
}
