package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is an answer of the API other than 2xx: the API's error object, or
// for an answer that is not one (a proxy's, say) a Code of "HTTP <status>"
// and the status text.
type Error struct {
	// Status is the HTTP status of the answer.
	Status    int          `json:"-"`
	Code      string       `json:"error"`
	Message   string       `json:"message"`
	RequestID string       `json:"request_id"`
	Details   []FieldError `json:"details"`
	// Required is the permission a 403 forbidden needed.
	Required string `json:"required,omitempty"`
	// Unknown are the query parameters a 400 refused because the route
	// does not take them; Allowed those it takes.
	Unknown []string `json:"unknown,omitempty"`
	Allowed []string `json:"allowed,omitempty"`
	// Index names the operation of a batch whose error this is (from 0);
	// nil when the error is not one operation's (Client.Batch).
	Index *int `json:"index,omitempty"`
	// RetryAfter is the wait a 429 or 503 asked for in its Retry-After
	// header; 0 when it did not say.
	RetryAfter time.Duration `json:"-"`
}

// FieldError is one field's part of a validation error.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func newError(res *http.Response, body []byte, now time.Time) *Error {
	e := &Error{}
	if json.Unmarshal(body, e) != nil || e.Code == "" {
		*e = Error{Code: fmt.Sprintf("HTTP %d", res.StatusCode), Message: http.StatusText(res.StatusCode)}
	}
	e.Status = res.StatusCode
	e.RetryAfter = parseRetryAfter(res.Header.Get("Retry-After"), now)
	return e
}

// Error reads "code: message; field: message … (request id)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Summary())
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	return b.String()
}

// Summary is Error without the request id: "code: message; field:
// message …", after "operation <index>: " for a batch's operation, for
// callers that add their own advice before it.
func (e *Error) Summary() string {
	var b strings.Builder
	if e.Index != nil {
		fmt.Fprintf(&b, "operation %d: ", *e.Index)
	}
	fmt.Fprintf(&b, "%s: %s", e.Code, e.Message)
	for _, d := range e.Details {
		fmt.Fprintf(&b, "; %s: %s", d.Field, d.Message)
	}
	return b.String()
}

// TransportError is a request that got no answer: the connection failed,
// timed out, or broke while the answer was read.
type TransportError struct {
	Method, URL string
	Err         error
}

func (e *TransportError) Error() string { return e.Method + " " + e.URL + ": " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// Transient reports whether a request that failed with err may succeed when
// sent again unchanged: it got no answer, or a 502, 503 or 504. A 429 is
// not counted here: it asks for a wait (Error.RetryAfter), which a caller
// may take for any request. A Client built WithRetries retries these
// itself, as far as a request is safe to repeat.
func Transient(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return true
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout
	}
	return false
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an
// HTTP-date. It returns 0 when the header is absent or unreadable, or the
// date has passed.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
