package mapping

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ohler55/ojg/jp"
)

// MaxSourceBytes bounds a rule's source.
const MaxSourceBytes = 512

// maxIndexDigits bounds an array index: ojg's parser does not check for
// overflow, so [18446744073709551615] would silently read as [-1].
const maxIndexDigits = 9

// source is a compiled rule source: a JSONPath made only of $, the payload
// key, and then keys and array indexes.
type source struct {
	path jp.Expr
}

// errOneValue ends every message about a fragment that could select several
// values.
const errOneValue = "a rule selects at most one value"

// compileSource parses src and refuses anything but $.payload followed by
// keys and array indexes.
func compileSource(src string) (source, error) {
	switch {
	case src == "":
		return source{}, errors.New("is required")
	case len(src) > MaxSourceBytes:
		return source{}, fmt.Errorf("must be at most %d bytes", MaxSourceBytes)
	case !utf8.ValidString(src):
		return source{}, errors.New("must be valid UTF-8")
	case strings.ContainsFunc(src, isControl):
		return source{}, errors.New("must not contain control characters")
	}
	x, err := jp.ParseString(src)
	if err != nil {
		return source{}, fmt.Errorf("is not a valid JSONPath: %w", err)
	}
	if len(x) < 2 || x[0] != jp.Root('$') || x[1] != jp.Child("payload") {
		return source{}, errors.New("must start with $.payload")
	}
	for _, f := range x[2:] {
		if err := checkFrag(f); err != nil {
			return source{}, err
		}
	}
	if err := checkIndexDigits(src); err != nil {
		return source{}, err
	}
	return source{path: x}, nil
}

// checkFrag allows keys and array indexes, the fragments that select at most
// one value, and names what it refuses in the words an admin wrote it in.
func checkFrag(f jp.Frag) error {
	switch f.(type) {
	case jp.Child, jp.Nth:
		return nil
	case jp.Wildcard:
		return errors.New("must not use a wildcard (*): " + errOneValue)
	case jp.Descent:
		return errors.New("must not use recursive descent (..): " + errOneValue)
	case jp.Union:
		return errors.New("must not use a union ([a,b]): " + errOneValue)
	case jp.Slice:
		return errors.New("must not use a slice ([start:end]): " + errOneValue)
	case *jp.Filter:
		return errors.New("must not use a filter ([?(...)]): " + errOneValue)
	case *jp.Proc:
		return errors.New("must not use a script ([(...)])")
	case jp.At:
		return errors.New("must not use @")
	default:
		return errors.New("may only use keys and array indexes after $.payload")
	}
}

// checkIndexDigits refuses array indexes too long to have been parsed
// faithfully. It runs on a source already known to hold only keys and
// indexes, where a '[' outside a quoted key opens either a quoted key or an
// index.
func checkIndexDigits(src string) error {
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[':
			j := i + 1
			for j < len(src) && (src[j] == ' ' || src[j] == '-') {
				j++
			}
			digits := 0
			for j < len(src) && '0' <= src[j] && src[j] <= '9' {
				digits++
				j++
			}
			if digits > maxIndexDigits {
				return fmt.Errorf("array index must have at most %d digits", maxIndexDigits)
			}
		}
	}
	return nil
}
