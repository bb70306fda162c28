package models

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Values that PostgreSQL's jsonb cannot hold are refused on both databases
// alike, so that a record SQLite takes is one PostgreSQL takes too: U+0000
// in a string or an object key, and numbers outside its numeric range.
// Numbers are held to float64's range, which lies inside that.
const (
	errNUL         = "must not contain the NUL character (\\u0000)"
	errNumberRange = "must hold only numbers that are 0 or between 1e-308 and 1.7e308 in magnitude"
)

// unstorable returns why v, a decoded JSON value, cannot be stored, or "".
func unstorable(v any) string {
	switch v := v.(type) {
	case string:
		if strings.ContainsRune(v, 0) {
			return errNUL
		}
	case json.Number:
		if !numberInRange(v) {
			return errNumberRange
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) {
				return errNUL
			}
			if msg := unstorable(e); msg != "" {
				return msg
			}
		}
	case []any:
		for _, e := range v {
			if msg := unstorable(e); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// numberInRange reports whether n is a finite float64 that is 0 only when
// n is: strconv reports overflow, but an underflow parses as 0 silently.
func numberInRange(n json.Number) bool {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return false
	}
	if f != 0 {
		return true
	}
	mantissa, _, _ := strings.Cut(strings.ToLower(string(n)), "e")
	return strings.Trim(mantissa, "+-0.") == ""
}

// unstorableErrors names the members of m, under prefix, that cannot be
// stored.
func unstorableErrors(prefix string, m map[string]any) []FieldError {
	var errs []FieldError
	for k, v := range m {
		msg := unstorable(v)
		if strings.ContainsRune(k, 0) {
			msg = errNUL
		}
		if msg != "" {
			name := strings.ToValidUTF8(strings.ReplaceAll(k, "\x00", "\\u0000"), "?")
			errs = append(errs, FieldError{Field: prefix + "." + name, Message: msg})
		}
	}
	slices.SortFunc(errs, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
	return errs
}

// FindNUL names the first string or object key in v, a decoded JSON value,
// that holds U+0000, by its path (a.b[2].c), and reports whether there is one.
func FindNUL(v any) (FieldError, bool) {
	path, ok := findNUL(v)
	return FieldError{Field: path, Message: errNUL}, ok
}

func findNUL(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return "", strings.ContainsRune(v, 0)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if strings.ContainsRune(k, 0) {
				return strings.ToValidUTF8(strings.ReplaceAll(k, "\x00", `\u0000`), "?"), true
			}
			if p, ok := findNUL(v[k]); ok {
				return joinPath(k, p), true
			}
		}
	case []any:
		for i, e := range v {
			if p, ok := findNUL(e); ok {
				return joinPath("["+strconv.Itoa(i)+"]", p), true
			}
		}
	}
	return "", false
}

func joinPath(head, rest string) string {
	if rest == "" || strings.HasPrefix(rest, "[") {
		return head + rest
	}
	return head + "." + rest
}
