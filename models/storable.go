package models

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Rows written from outside input (a request path, a receiver's answer,
// an inbound call) hold text recordhub does not choose. Such text is made
// storable here, by the store, as each row is written: PostgreSQL refuses
// invalid UTF-8 and NUL in text (and NUL in jsonb), and a refused row would
// lose a whole access-log batch or fail a delivery after its receiver got
// it. Values a caller submits as data (records, modules, keys) are refused
// instead, by validation, so that what is stored is what was sent.

// Bounds of stored text columns, in bytes (with MaxResponseBody and
// MaxInboundBody).
const (
	// MaxErrorMessage bounds a delivery's stored error message.
	MaxErrorMessage = 500
	// MaxAccessLogPath bounds an access log's path.
	MaxAccessLogPath = 2048
	// MaxUserAgent bounds an access log's user agent.
	MaxUserAgent = 512
	// maxRecoveryError bounds the error of a failed recovery.
	maxRecoveryError = 1000
)

// StorableText returns s as text every database stores and gives back
// unchanged: valid UTF-8 (each run of invalid bytes becomes U+FFFD), no
// NUL (each becomes U+FFFD), and at most max bytes, cut on a character
// boundary; max 0 bounds nothing. The store applies it to every text column
// of the rows it writes from outside input; a caller that holds such text
// before it reaches the store (a queue) may apply it earlier to bound its
// memory, and the store's pass then changes nothing.
func StorableText(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// storableHeaders returns a copy of h whose names and values are storable
// text (nil stays nil).
func storableHeaders(h Headers) Headers {
	if h == nil {
		return nil
	}
	out := make(Headers, len(h))
	for k, vs := range h {
		k = StorableText(k, 0)
		for _, v := range vs {
			out[k] = append(out[k], StorableText(v, 0))
		}
		if vs != nil && out[k] == nil {
			out[k] = []string{}
		}
	}
	return out
}

// storableFieldErrors returns a copy of errs whose texts are storable
// (nil stays nil).
func storableFieldErrors(errs FieldErrors) FieldErrors {
	if errs == nil {
		return nil
	}
	out := make(FieldErrors, len(errs))
	for i, e := range errs {
		e.Field, e.Message, e.Source = StorableText(e.Field, 0), StorableText(e.Message, 0), StorableText(e.Source, 0)
		out[i] = e
	}
	return out
}

// Values that one of the databases cannot hold or read are refused on
// both alike, so that a record SQLite takes is one PostgreSQL takes too:
// U+0000 in a string or an object key, and numbers outside its numeric
// range, which PostgreSQL's jsonb cannot hold (numbers are held to
// float64's range, which lies inside that); and values nested deeper than
// MaxJSONDepth, far within what SQLite's JSON functions read.
const (
	errNUL         = "must not contain the NUL character (\\u0000)"
	errNumberRange = "must hold only numbers that are 0 or between 1e-308 and 1.7e308 in magnitude"
)

var errTooDeep = fmt.Sprintf("must nest at most %d levels of objects and arrays", MaxJSONDepth)

// unstorable returns why v, a decoded JSON value, cannot be stored, or "".
func unstorable(v any) string { return unstorableAt(v, 0) }

// unstorableAt is unstorable of a value that depth objects and arrays
// enclose.
func unstorableAt(v any, depth int) string {
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
		if depth >= MaxJSONDepth {
			return errTooDeep
		}
		for k, e := range v {
			if strings.ContainsRune(k, 0) {
				return errNUL
			}
			if msg := unstorableAt(e, depth+1); msg != "" {
				return msg
			}
		}
	case []any:
		if depth >= MaxJSONDepth {
			return errTooDeep
		}
		for _, e := range v {
			if msg := unstorableAt(e, depth+1); msg != "" {
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
