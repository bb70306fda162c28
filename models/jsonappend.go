package models

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// A record's events and its write's answer are written by appending their
// JSON to a buffer rather than by encoding/json, which reflects over their
// structs and validates again the record's JSON it is handed. What they
// write must stay, byte for byte, what encoding/json wrote: events are
// signed and delivered as written, and clients compare answers. The
// helpers below write strings, times and decoded JSON values exactly as
// json.Marshal does.

// AppendJSONString appends s as json.Marshal writes a string: with its
// HTML-safe escaping of <, > and &, U+2028 and U+2029 escaped, the short
// escapes \b, \f, \n, \r and \t, every other control byte as \u00XX and
// each byte of invalid UTF-8 as \ufffd.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSONTime appends t as json.Marshal writes a time.Time (RFC 3339
// with nanoseconds, in t's own zone), and reports false, with b as it was,
// for a time that json.Marshal refuses: a year outside 0 to 9999, or a
// zone 24 hours or more away from UTC.
func AppendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	n0 := len(b)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	// What Time.MarshalJSON checks of what it formatted.
	if len(b) < n0+1+len("9999-") || b[n0+1+len("9999")] != '-' {
		return b[:n0], false
	}
	if b[len(b)-1] != 'Z' {
		c := b[len(b)-len("Z07:00")]
		h := 10*int(b[len(b)-len("07:00")]-'0') + int(b[len(b)-len("7:00")]-'0')
		if ('0' <= c && c <= '9') || h >= 24 {
			return b[:n0], false
		}
	}
	return append(b, '"'), true
}

// maxAppendDepth is how deep appendJSONValueOf goes before it leaves a
// value to json.Marshal, whose cycle detection starts at that depth.
const maxAppendDepth = 1000

// marshalObject is json.Marshal(m) for a record's fields or custom data:
// the values JSON decodes to (with numbers as json.Number) are appended,
// anything else is encoded by json.Marshal.
func marshalObject(m map[string]any) ([]byte, error) {
	if b, ok := appendJSONValueOf(make([]byte, 0, 256), m, 0); ok {
		return b, nil
	}
	return json.Marshal(m)
}

// appendJSONValueOf appends v as json.Marshal writes it, and reports false,
// with b as it was, for a value json.Marshal refuses or nested deeper than
// maxAppendDepth.
func appendJSONValueOf(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxAppendDepth {
		return b, false
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return AppendJSONString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case json.Number:
		n := string(v)
		if n == "" {
			n = "0" // as json.Marshal writes the zero Number
		}
		if !validJSONNumber(n) {
			return b, false
		}
		return append(b, n...), true
	case map[string]any:
		return appendJSONMap(b, v, depth)
	case JSONObject:
		return appendJSONMap(b, v, depth)
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		n0 := len(b)
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSONValueOf(b, e, depth+1); !ok {
				return b[:n0], false
			}
		}
		return append(b, ']'), true
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, out...), true
}

// appendJSONMap appends m as json.Marshal writes a map: null when nil,
// else its members in the order of their keys.
func appendJSONMap(b []byte, m map[string]any, depth int) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	n0 := len(b)
	keys := make([]string, 0, 16)
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendJSONValueOf(b, m[k], depth+1); !ok {
			return b[:n0], false
		}
	}
	return append(b, '}'), true
}

// validJSONNumber reports whether s is a JSON number, as json.Marshal
// checks a json.Number before it writes it.
func validJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		if s = s[1:]; s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			if s = s[1:]; s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}
