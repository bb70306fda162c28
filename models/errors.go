package models

import (
	"errors"
	"fmt"
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
	KindInternal         Kind = "internal"
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
