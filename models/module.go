package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"time"
)

// Field types a module may declare.
const (
	TypeString   = "string"
	TypeText     = "text"
	TypeInteger  = "integer"
	TypeNumber   = "number"
	TypeBoolean  = "boolean"
	TypeDatetime = "datetime"
	TypeEmail    = "email"
	TypeURL      = "url"
	TypeEnum     = "enum"
	TypeStatus   = "status"
	TypeJSON     = "json"
)

var fieldTypes = []string{TypeString, TypeText, TypeInteger, TypeNumber, TypeBoolean, TypeDatetime, TypeEmail, TypeURL, TypeEnum, TypeStatus, TypeJSON}

// Module is a tenant's collection of records with typed fields.
type Module struct {
	ID        string    `gorm:"primaryKey"`
	TenantID  string    `gorm:"not null"`
	Slug      string    `gorm:"not null"`
	Name      string    `gorm:"not null"`
	Fields    FieldList `gorm:"type:text"`
	CreatedAt time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt time.Time `gorm:"autoUpdateTime:false"`
}

// Field is one typed field of a module.
type Field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	// Options are the allowed values of an enum field.
	Options []string `json:"options,omitempty"`
	// States are the allowed values of a status field.
	States []string `json:"states,omitempty"`
	// Initial is the state a new record gets when it names none.
	Initial string `json:"initial,omitempty"`
	// Transitions maps a state to the states it may move to. When nil, any
	// move between states is allowed; when set, a state missing from it is
	// final.
	Transitions map[string][]string `json:"transitions,omitempty"`
}

var (
	slugPattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	fieldNamePattern = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,62}$`)
)

// ValidateModule checks a module's slug, name and field definitions.
func ValidateModule(slug, name string, fields []Field) []FieldError {
	var errs []FieldError
	if !slugPattern.MatchString(slug) {
		errs = append(errs, FieldError{Field: "slug", Message: "must be 1-63 characters of a-z, 0-9, '-' or '_', starting with a letter or digit"})
	}
	if name == "" || len(name) > MaxNameBytes {
		errs = append(errs, FieldError{Field: "name", Message: fmt.Sprintf("must be 1 to %d bytes, got %d", MaxNameBytes, len(name))})
	}
	if len(fields) > MaxModuleFields {
		errs = append(errs, FieldError{Field: "fields", Message: fmt.Sprintf("at most %d fields", MaxModuleFields)})
	}
	seen := map[string]bool{}
	for i, f := range fields {
		at := fmt.Sprintf("fields[%d]", i)
		if !fieldNamePattern.MatchString(f.Name) {
			errs = append(errs, FieldError{Field: at + ".name", Message: "must be 1-63 characters of letters, digits or '_', not starting with a digit"})
		} else if seen[f.Name] {
			errs = append(errs, FieldError{Field: at + ".name", Message: fmt.Sprintf("duplicate field name %q", f.Name)})
		}
		seen[f.Name] = true
		if !slices.Contains(fieldTypes, f.Type) {
			errs = append(errs, FieldError{Field: at + ".type", Message: fmt.Sprintf("must be one of %v", fieldTypes)})
			continue
		}
		errs = append(errs, validateFieldExtras(at, f)...)
	}
	return errs
}

func validateFieldExtras(at string, f Field) []FieldError {
	var errs []FieldError
	if f.Type != TypeEnum && len(f.Options) > 0 {
		errs = append(errs, FieldError{Field: at + ".options", Message: "only enum fields have options"})
	}
	if f.Type != TypeStatus && (len(f.States) > 0 || f.Initial != "" || f.Transitions != nil) {
		errs = append(errs, FieldError{Field: at + ".states", Message: "only status fields have states, initial and transitions"})
	}
	switch f.Type {
	case TypeEnum:
		if len(f.Options) == 0 {
			errs = append(errs, FieldError{Field: at + ".options", Message: "an enum field needs at least one option"})
		}
		if hasDuplicates(f.Options) {
			errs = append(errs, FieldError{Field: at + ".options", Message: "options must be unique"})
		}
	case TypeStatus:
		if len(f.States) == 0 {
			errs = append(errs, FieldError{Field: at + ".states", Message: "a status field needs at least one state"})
		}
		if hasDuplicates(f.States) {
			errs = append(errs, FieldError{Field: at + ".states", Message: "states must be unique"})
		}
		if f.Initial != "" && !slices.Contains(f.States, f.Initial) {
			errs = append(errs, FieldError{Field: at + ".initial", Message: fmt.Sprintf("%q is not one of the states", f.Initial)})
		}
		for from, tos := range f.Transitions {
			if !slices.Contains(f.States, from) {
				errs = append(errs, FieldError{Field: at + ".transitions", Message: fmt.Sprintf("%q is not one of the states", from)})
			}
			for _, to := range tos {
				if !slices.Contains(f.States, to) {
					errs = append(errs, FieldError{Field: at + ".transitions", Message: fmt.Sprintf("%q is not one of the states", to)})
				}
			}
		}
	}
	return errs
}

func hasDuplicates(l []string) bool {
	seen := make(map[string]bool, len(l))
	for _, s := range l {
		if seen[s] {
			return true
		}
		seen[s] = true
	}
	return false
}

// Field returns the named field definition.
func (m *Module) Field(name string) (Field, bool) {
	for _, f := range m.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// ValidateRecordFields checks a record's complete field values against the
// module and fills in the initial state of status fields on creation. prev
// holds the values before an update, nil on creation. It returns the
// problems found, one per field.
func (m *Module) ValidateRecordFields(fields map[string]any, prev map[string]any) []FieldError {
	var errs []FieldError
	for name := range fields {
		if _, ok := m.Field(name); !ok {
			errs = append(errs, FieldError{Field: "fields." + name, Message: "unknown field"})
		}
	}
	for _, f := range m.Fields {
		v, present := fields[f.Name]
		if present && v == nil {
			delete(fields, f.Name)
			present = false
		}
		if !present && prev == nil && f.Type == TypeStatus && f.Initial != "" {
			fields[f.Name] = f.Initial
			v, present = f.Initial, true
		}
		if !present {
			if f.Required {
				errs = append(errs, FieldError{Field: "fields." + f.Name, Message: "is required"})
			}
			continue
		}
		if msg := checkValue(f, v); msg != "" {
			errs = append(errs, FieldError{Field: "fields." + f.Name, Message: msg})
			continue
		}
		if f.Type == TypeStatus && prev != nil {
			if msg := checkTransition(f, prev[f.Name], v); msg != "" {
				errs = append(errs, FieldError{Field: "fields." + f.Name, Message: msg})
			}
		}
	}
	slices.SortFunc(errs, func(a, b FieldError) int {
		switch {
		case a.Field < b.Field:
			return -1
		case a.Field > b.Field:
			return 1
		}
		return 0
	})
	return errs
}

func checkValue(f Field, v any) string {
	switch f.Type {
	case TypeString, TypeText:
		s, ok := v.(string)
		if !ok {
			return "must be a string"
		}
		return unstorable(s)
	case TypeInteger:
		if !isInteger(v) {
			return "must be an integer"
		}
	case TypeNumber:
		if _, ok := asFloat(v); !ok {
			return "must be a number"
		}
		return unstorable(v)
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return "must be a boolean"
		}
	case TypeDatetime:
		s, ok := v.(string)
		if !ok {
			return "must be an RFC 3339 date-time string"
		}
		if _, err := ParseTime(s); errors.Is(err, ErrTimeRange) {
			return err.Error()
		} else if err != nil {
			return "must be an RFC 3339 date-time string"
		}
	case TypeEmail:
		s, ok := v.(string)
		if !ok {
			return "must be an email address"
		}
		a, err := mail.ParseAddress(s)
		if err != nil || a.Address != s {
			return "must be an email address"
		}
	case TypeURL:
		s, ok := v.(string)
		if !ok {
			return "must be an absolute http or https URL"
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "must be an absolute http or https URL"
		}
	case TypeEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(f.Options, s) {
			return fmt.Sprintf("must be one of %v", f.Options)
		}
	case TypeStatus:
		s, ok := v.(string)
		if !ok || !slices.Contains(f.States, s) {
			return fmt.Sprintf("must be one of the states %v", f.States)
		}
	case TypeJSON:
		return unstorable(v)
	}
	return ""
}

func checkTransition(f Field, from, to any) string {
	fromState, _ := from.(string)
	toState, _ := to.(string)
	if fromState == "" || fromState == toState || f.Transitions == nil {
		return ""
	}
	if !slices.Contains(f.Transitions[fromState], toState) {
		return fmt.Sprintf("cannot move from %q to %q", fromState, toState)
	}
	return ""
}

func isInteger(v any) bool {
	switch n := v.(type) {
	case json.Number:
		_, err := n.Int64()
		return err == nil
	case float64:
		return n == math.Trunc(n) && math.Abs(n) < 1<<53
	case int, int64:
		return true
	}
	return false
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// Number filters take a JSON number literal (RFC 8259) and nothing else:
// no NaN or Infinity, hex, underscores, leading '+' or zeros, bare '.' or
// spaces, which strconv would take and PostgreSQL would not. Integer
// filters take an integer literal within int64.
var (
	jsonNumber  = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)
	jsonInteger = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)$`)
)

// FilterValue converts a query-string value to the JSON value a field
// holds, the value a condition compares with, refusing a number or
// integer that is not written as above before any SQL is built. The error
// reads after the parameter's name.
func (f Field) FilterValue(raw string) (any, error) {
	switch f.Type {
	case TypeInteger:
		n := json.Number(raw)
		if _, err := n.Int64(); err != nil || !jsonInteger.MatchString(raw) {
			return nil, errors.New("must be an integer written in decimal digits, such as 42 or -7")
		}
		return n, nil
	case TypeNumber:
		n := json.Number(raw)
		if _, err := n.Float64(); err != nil || !numberInRange(n) || !jsonNumber.MatchString(raw) {
			return nil, errors.New("must be a JSON number, such as 42, -0.5 or 1.5e3")
		}
		return n, nil
	case TypeBoolean:
		switch raw {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, errors.New("must be true or false")
	case TypeJSON:
		return nil, errors.New("json fields cannot be filtered")
	case TypeDatetime:
		// No stored value can equal a time that is not one, or one outside
		// the years records accept.
		if _, err := ParseTime(raw); err != nil {
			return nil, err
		}
	}
	if msg := unstorable(raw); msg != "" {
		return nil, errors.New(msg)
	}
	return raw, nil
}
