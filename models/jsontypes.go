package models

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// JSONObject is a JSON object stored in a JSON (PostgreSQL jsonb, SQLite
// text) column. Numbers decode as json.Number so integers keep their
// precision.
type JSONObject map[string]any

// Value implements driver.Valuer.
func (o JSONObject) Value() (driver.Value, error) {
	if o == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string]any(o))
	if err != nil {
		return nil, fmt.Errorf("encode json object: %w", err)
	}
	return string(b), nil
}

// Scan implements sql.Scanner.
func (o *JSONObject) Scan(src any) error {
	m := map[string]any{}
	if err := scanJSON(src, &m); err != nil {
		return err
	}
	*o = m
	return nil
}

// Permissions maps a module id, or "*" for every module, to the actions a
// key may take there: "read", "write", "delete".
type Permissions map[string][]string

// Value implements driver.Valuer.
func (p Permissions) Value() (driver.Value, error) {
	if p == nil {
		return "{}", nil
	}
	b, err := json.Marshal(map[string][]string(p))
	if err != nil {
		return nil, fmt.Errorf("encode permissions: %w", err)
	}
	return string(b), nil
}

// Scan implements sql.Scanner.
func (p *Permissions) Scan(src any) error {
	m := map[string][]string{}
	if err := scanJSON(src, &m); err != nil {
		return err
	}
	*p = m
	return nil
}

// JSONArray is a JSON array in one column (PostgreSQL jsonb, SQLite text);
// nil is stored as [].
type JSONArray[T any] []T

// Value implements driver.Valuer.
func (a JSONArray[T]) Value() (driver.Value, error) {
	if a == nil {
		return "[]", nil
	}
	b, err := json.Marshal([]T(a))
	if err != nil {
		return nil, fmt.Errorf("encode json array: %w", err)
	}
	return string(b), nil
}

// Scan implements sql.Scanner.
func (a *JSONArray[T]) Scan(src any) error {
	var l []T
	if err := scanJSON(src, &l); err != nil {
		return err
	}
	*a = l
	return nil
}

// FieldList is a module's field definitions.
type FieldList = JSONArray[Field]

// StringList is a list of strings, such as an endpoint's event types.
type StringList = JSONArray[string]

// FieldErrors are the errors a refused inbound call was answered.
type FieldErrors = JSONArray[FieldError]

func scanJSON(src any, dst any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		return nil
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		return fmt.Errorf("scan json: unsupported type %T", src)
	}
	return DecodeJSON(b, dst)
}

// DecodeJSON decodes b into dst with numbers kept as json.Number.
func DecodeJSON(b []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("decode json: %w", err)
	}
	return nil
}
