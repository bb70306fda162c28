package mapping

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Rule copies the value at Source into Field.
type Rule struct {
	Source string `json:"source"`
	Field  string `json:"field"`
}

// Target is where a rule writes: a module field, or a top-level key of
// custom_data.
type Target struct {
	Custom bool   // true for "custom_data.<key>"
	Name   string // field name, or the custom_data key
}

// customPrefix marks a target in custom_data. A bare "custom_data" is a
// module field of that name, like any other name matching fieldPattern.
const customPrefix = "custom_data."

// maxCustomKey bounds a custom_data key, in characters.
const maxCustomKey = 128

// fieldPattern is the pattern of module field names in models, repeated so
// that this package stays free of the store and its dependencies.
var fieldPattern = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,62}$`)

// String returns the target as a rule's Field names it.
func (t Target) String() string {
	if t.Custom {
		return customPrefix + t.Name
	}
	return t.Name
}

// ParseTarget parses a rule's Field. Callers use it for anything else that
// names targets the same way, such as the fields a webhook matches records
// on.
func ParseTarget(field string) (Target, error) {
	if key, ok := strings.CutPrefix(field, customPrefix); ok {
		if err := checkCustomKey(key); err != nil {
			return Target{}, err
		}
		return Target{Custom: true, Name: key}, nil
	}
	if !fieldPattern.MatchString(field) {
		return Target{}, errors.New("must be a field name (1-63 letters, digits or '_', not starting with a digit) or custom_data.<key>")
	}
	return Target{Name: field}, nil
}

// checkCustomKey allows one top-level key: a '.' would suggest a nested
// path that custom_data targets do not have. Control characters are refused
// because PostgreSQL cannot store NUL in JSON text and the rest only hide
// what a rule does.
func checkCustomKey(key string) error {
	n := utf8.RuneCountInString(key)
	switch {
	case n == 0 || n > maxCustomKey:
		return fmt.Errorf("custom_data key must be 1-%d characters", maxCustomKey)
	case !utf8.ValidString(key):
		return errors.New("custom_data key must be valid UTF-8")
	case strings.Contains(key, "."):
		return errors.New("custom_data key must not contain '.': only top-level keys can be written")
	case strings.ContainsFunc(key, isControl):
		return errors.New("custom_data key must not contain control characters")
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
