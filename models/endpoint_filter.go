package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// EndpointFilter is an endpoint's content filter: a record field's name →
// the value the field must equal, read by the field's type as the records
// list reads filter[<field>]=<value> (Field.FilterValue): a string, a bool
// or a json.Number; or → an object of operator → value, as the list reads
// filter[<field>][<op>]=<value> (FilterCond). json fields cannot be
// filtered, so an object is always operators. Every condition must hold.
// Empty: every event passes.
//
// A status_change event carries the record after the change, so a
// condition on its status field names the status it moved to.
type EndpointFilter map[string]any

// Value implements driver.Valuer; nil is stored as {}.
func (f EndpointFilter) Value() (driver.Value, error) { return JSONObject(f).Value() }

// Scan implements sql.Scanner; numbers come back as json.Number.
func (f *EndpointFilter) Scan(src any) error {
	var o JSONObject
	if err := o.Scan(src); err != nil {
		return err
	}
	*f = EndpointFilter(o)
	return nil
}

// Matches reports whether a record's fields, decoded with numbers as
// json.Number, hold every condition (FilterHolds). A field the record
// lacks, or holds as null, matches no condition but exists=false.
func (f EndpointFilter) Matches(fields map[string]any) bool {
	for name, v := range f {
		for _, c := range filterConds(v) {
			if !FilterHolds(c, fields[name]) {
				return false
			}
		}
	}
	return true
}

// filterEqual compares a condition's value with a record's as the list's
// SQL does: strings and booleans exactly, numbers by value (2 equals 2.0),
// never a number with a string or a boolean.
func filterEqual(want, got any) bool {
	switch w := want.(type) {
	case string:
		g, ok := got.(string)
		return ok && g == w
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return false
		}
		wi, werr := strconv.ParseInt(string(w), 10, 64)
		gi, gerr := strconv.ParseInt(string(g), 10, 64)
		if werr == nil && gerr == nil {
			return wi == gi
		}
		wf, werr := strconv.ParseFloat(string(w), 64)
		gf, gerr := strconv.ParseFloat(string(g), 64)
		return werr == nil && gerr == nil && wf == gf
	}
	return false
}

// validateFilter checks e's filter against every module of e.ModuleIDs
// and stores it in e in the form the dispatcher compares (the list's
// filter values). A filter needs module_ids: its conditions are on those
// modules' fields, and each must be valid for every one of them. Modules
// that do not exist are left to validateEndpoint to report.
func (s *Store) validateFilter(ctx context.Context, tenantID string, e *WebhookEndpoint) ([]FieldError, error) {
	if len(e.Filter) == 0 {
		e.Filter = EndpointFilter{}
		return nil, nil
	}
	if n := countConds(e.Filter); n > MaxFilterConditions {
		return []FieldError{{Field: "filter", Message: fmt.Sprintf("at most %d conditions (each operator counts as one), got %d", MaxFilterConditions, n)}}, nil
	}
	if len(e.ModuleIDs) == 0 {
		return []FieldError{{Field: "filter", Message: "a filter needs module_ids: its conditions are on the fields of those modules"}}, nil
	}
	var mods []*Module
	for _, id := range e.ModuleIDs {
		m, err := s.GetModule(ctx, tenantID, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("check filter: %w", err)
		}
		mods = append(mods, m)
	}
	var errs []FieldError
	out := make(EndpointFilter, len(e.Filter))
	for _, name := range slices.Sorted(maps.Keys(e.Filter)) {
		for _, m := range mods {
			f, ok := m.Field(name)
			if !ok {
				errs = append(errs, FieldError{Field: "filter." + name, Message: fmt.Sprintf("unknown field of module %q", m.Slug)})
				break
			}
			v, msg := filterCondition(f, e.Filter[name])
			if msg != "" {
				if len(mods) > 1 {
					msg += fmt.Sprintf(" (module %q)", m.Slug)
				}
				errs = append(errs, FieldError{Field: "filter." + name, Message: msg})
				break
			}
			out[name] = v
		}
	}
	if len(errs) == 0 {
		// The values are bounded one by one; the names by the modules.
		if b, err := json.Marshal(out); err == nil && len(b) > MaxFilterBytes {
			errs = append(errs, FieldError{Field: "filter", Message: fmt.Sprintf("must encode to at most %d bytes of JSON, got %d", MaxFilterBytes, len(b))})
		}
	}
	e.Filter = out
	return errs, nil
}

// filterCondition reads a filter entry's JSON value v for field f: a
// value the field could hold, the eq condition, or an object of operator
// → value (FilterCond), each operator one the field's type takes. It
// returns the entry converted as the list converts filter[<field>], or
// why v is refused.
func filterCondition(f Field, v any) (any, string) {
	if f.Type == TypeJSON {
		return nil, "json fields cannot be filtered"
	}
	ops, ok := v.(map[string]any)
	if !ok {
		return filterOperand(f, OpEq, v)
	}
	if len(ops) == 0 {
		return nil, "must be a value or an object of operator → value, not {}"
	}
	out := make(map[string]any, len(ops))
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		if msg := checkOp(f, op); msg != "" {
			return nil, msg
		}
		x, msg := filterOperand(f, op, ops[op])
		if msg != "" {
			return nil, op + ": " + msg
		}
		out[op] = x
	}
	return out, ""
}

// filterOperand reads the JSON value v of op on field f, as the list
// reads filter[<field>][<op>]: a list of at most MaxFilterInValues values
// for in, true or false for exists, a string for prefix, else a value
// the field could hold.
func filterOperand(f Field, op string, v any) (any, string) {
	switch op {
	case OpIn:
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return nil, "must be a non-empty array of values"
		}
		if len(list) > MaxFilterInValues {
			return nil, fmt.Sprintf("must list at most %d values, got %d", MaxFilterInValues, len(list))
		}
		out := make([]any, len(list))
		for i, x := range list {
			y, msg := filterValueOf(f, x)
			if msg != "" {
				return nil, fmt.Sprintf("value %d %s", i+1, msg)
			}
			out[i] = y
		}
		return out, ""
	case OpExists:
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false"
		}
		return b, ""
	case OpPrefix:
		p, ok := v.(string)
		if !ok {
			return nil, "must be a string"
		}
		if len(p) > MaxFilterValueBytes {
			return nil, tooLong(MaxFilterValueBytes, len(p))
		}
		if msg := unstorable(p); msg != "" {
			return nil, msg
		}
		return p, ""
	}
	return filterValueOf(f, v)
}

// filterValueOf reads one JSON value v compared with field f: a value
// the field could hold (a number for integer and number fields, true or
// false for booleans, a string otherwise, one of the options or states
// of an enum or status), converted as the list converts filter[<field>].
func filterValueOf(f Field, v any) (any, string) {
	// Go callers may give numbers as Go numbers; the API gives json.Number.
	switch x := v.(type) {
	case int:
		v = json.Number(strconv.Itoa(x))
	case int64:
		v = json.Number(strconv.FormatInt(x, 10))
	case float64:
		v = json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	}
	var raw string
	switch x := v.(type) {
	case nil:
		return nil, "must be a value the field could hold, not null"
	case map[string]any, []any:
		return nil, "must be a value the field could hold"
	case string:
		raw = x
	case json.Number:
		raw = string(x)
	case bool:
		raw = strconv.FormatBool(x)
	}
	if len(raw) > MaxFilterValueBytes {
		return nil, tooLong(MaxFilterValueBytes, len(raw))
	}
	if msg := checkValue(f, v); msg != "" {
		return nil, msg
	}
	out, err := f.FilterValue(raw)
	if err != nil {
		// checkValue has refused what FilterValue refuses, in its words.
		return nil, err.Error()
	}
	return out, ""
}

// EventMatcher checks one event against endpoints' filters. It reads the
// event's record once, when the first endpoint with a filter asks.
type EventMatcher struct {
	ev     *Event
	read   bool
	fields map[string]any
	err    error
}

// NewEventMatcher returns a matcher of ev.
func NewEventMatcher(ev *Event) *EventMatcher { return &EventMatcher{ev: ev} }

// Passes reports whether the event passes e's filter: the record it
// carries (after the change; before it, for a deletion) holds every
// condition. An endpoint without a filter, and an event about no record
// (endpoint_disabled), always pass. The error says the event's body could
// not be read, which the store's bodies never cause.
func (m *EventMatcher) Passes(e *WebhookEndpoint) (bool, error) {
	if len(e.Filter) == 0 || m.ev.RecordID == "" {
		return true, nil
	}
	if !m.read {
		m.read = true
		var body struct {
			Record struct {
				Fields map[string]any `json:"fields"`
			} `json:"record"`
		}
		if err := DecodeJSON([]byte(m.ev.Payload), &body); err != nil {
			m.err = fmt.Errorf("event %s: record: %w", m.ev.ID, err)
		}
		m.fields = body.Record.Fields
	}
	if m.err != nil {
		return false, m.err
	}
	return e.Filter.Matches(m.fields), nil
}
