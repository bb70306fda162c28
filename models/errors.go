package models

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an error for callers; the API maps each kind to one HTTP
// status in a single table.
type Kind string

// The kinds of error the store and the validators return.
const (
	KindInvalid      Kind = "invalid_request"
	KindUnauthorized Kind = "unauthorized"
	KindKeyExpired   Kind = "key_expired"
	KindNotFound     Kind = "not_found"
	KindConflict     Kind = "conflict"
	KindPrecondition Kind = "precondition_failed"
	KindValidation   Kind = "validation_failed"
	KindInvalidURL   Kind = "invalid_url"
	// KindTooLarge and KindUnsupportedType refuse request bodies.
	KindTooLarge        Kind = "payload_too_large"
	KindUnsupportedType Kind = "unsupported_media_type"
	// KindMappingFailed: an inbound payload could not be mapped to a valid record.
	KindMappingFailed Kind = "mapping_failed"
	// KindInvalidSignature: an inbound call's signature is missing or wrong.
	KindInvalidSignature Kind = "invalid_signature"
	// KindUnavailable: a service the call needs (the database, Temporal)
	// cannot be reached now; the same call may succeed later.
	KindUnavailable Kind = "unavailable"
	// KindCursorExpired: a change feed cursor points before events that
	// retention has purged; the reader must start over.
	KindCursorExpired Kind = "cursor_expired"
	KindInternal      Kind = "internal"
)

// FieldError names one field that failed validation.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
	// Rule and Source name the inbound mapping rule that produced the
	// value, in mapping_failed errors.
	Rule   *int   `json:"rule,omitempty"`
	Source string `json:"source,omitempty"`
}

// Error is an application error whose message is safe to show to callers.
type Error struct {
	Kind    Kind
	Message string
	Details []FieldError
}

func (e *Error) Error() string {
	if len(e.Details) == 0 {
		return e.Message
	}
	return fmt.Sprintf("%s: %s: %s", e.Message, e.Details[0].Field, e.Details[0].Message)
}

// Errorf returns an *Error of the given kind.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// ErrNotFound is returned when a row does not exist or belongs to another tenant.
var ErrNotFound = &Error{Kind: KindNotFound, Message: "not found"}

// Authentication failures. Unknown, missing, revoked and rotated-out keys
// share one error so callers learn nothing about which it was.
var (
	ErrUnauthorized = &Error{Kind: KindUnauthorized, Message: "a valid API key is required"}
	ErrKeyExpired   = &Error{Kind: KindKeyExpired, Message: "the API key has expired"}
)

// ErrUnavailable answers a call whose database cannot be reached (see
// IsUnavailable). The call was not applied, unless the connection broke
// while the database was committing it, which no client of a database
// can tell apart; either way the caller is told to retry.
var ErrUnavailable = &Error{Kind: KindUnavailable, Message: "the database cannot be reached; retry later"}

// ValidationError returns a validation_failed error carrying details.
func ValidationError(details []FieldError) *Error {
	return &Error{Kind: KindValidation, Message: "the request did not pass validation", Details: details}
}

// ErrorKind returns the kind of err, or KindInternal for errors that are not *Error.
func ErrorKind(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// compareFields orders field errors by field, with indexes in numeric
// order: mapping[2] before mapping[10].
func compareFields(a, b FieldError) int {
	x, y := a.Field, b.Field
	for x != "" && y != "" {
		dx, dy := digitRun(x), digitRun(y)
		if dx > 0 && dy > 0 {
			nx, ny := strings.TrimLeft(x[:dx], "0"), strings.TrimLeft(y[:dy], "0")
			if c := cmp.Compare(len(nx), len(ny)); c != 0 {
				return c
			}
			if c := strings.Compare(nx, ny); c != 0 {
				return c
			}
			x, y = x[dx:], y[dy:]
			continue
		}
		if x[0] != y[0] {
			return cmp.Compare(x[0], y[0])
		}
		x, y = x[1:], y[1:]
	}
	return cmp.Compare(len(x), len(y))
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
