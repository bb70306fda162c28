package activities

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/models"
)

// Types of the Temporal application errors Attempt returns. The
// non-retryable ones are marked so on the error itself; a workflow need not
// list them in its retry policy, though doing so is harmless.
const (
	// ErrTypeBlockedDestination: the URL or an address it resolved to is
	// blocked (SSRF). Not retryable.
	ErrTypeBlockedDestination = "BlockedDestination"
	// ErrTypeEndpointGone: the endpoint was deleted. Not retryable.
	ErrTypeEndpointGone = "EndpointGone"
	// ErrTypeEndpointDisabled: the endpoint is disabled. Not retryable.
	ErrTypeEndpointDisabled = "EndpointDisabled"
	// ErrTypeEventGone: the event no longer exists. Not retryable.
	ErrTypeEventGone = "EventGone"
	// ErrTypeDeliveryFailed: the receiver did not answer 2xx in time, or
	// could not be reached. Retryable; the details hold the AttemptOutput.
	ErrTypeDeliveryFailed = "DeliveryFailed"
	// ErrTypeStore: the store failed, reading the endpoint or event or
	// writing the attempt's row. Retryable.
	ErrTypeStore = "StoreFailed"
	// ErrTypeReceiverGone: the receiver answered 410 Gone; the endpoint is
	// disabled and the delivery ends. Not retryable.
	ErrTypeReceiverGone = "ReceiverGone"
)

// AttemptOutcome reads the AttemptOutput that a failed attempt put in its
// error's details (see ErrTypeDeliveryFailed): that of the first
// application error in err's chain, when it holds one with an attempt
// number. ok is false when it holds none: the attempt's row could not be
// written, or err is not an attempt's. Under an attempt's timeout, a
// server puts the previous attempt's failure, details and all: there the
// outcome read is the previous attempt's. It is the one reader of what
// Attempt writes into its errors, and a pure function, which the workflow
// may call.
func AttemptOutcome(err error) (out AttemptOutput, ok bool) {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.HasDetails() || appErr.Details(&out) != nil || out.Attempt == 0 {
		return AttemptOutput{}, false
	}
	return out, true
}

// Delivery error codes first named here, now defined in models with the
// others (the deliveries list filters on them).
const (
	DeliveryErrEventGone = models.DeliveryErrEventGone
	DeliveryErrCanceled  = models.DeliveryErrCanceled
	DeliveryErrInternal  = models.DeliveryErrInternal
)

var (
	errEndpointGone     = errors.New("the endpoint was deleted")
	errEndpointDisabled = errors.New("the endpoint is disabled")
	errEventGone        = errors.New("the event no longer exists")
)

// statusError is a response outside 2xx.
type statusError struct {
	code int
	// retryAfter is the delay a 429 or 503 asked for in Retry-After; 0
	// when it asked for none (or for one that could not be read).
	retryAfter time.Duration
}

func (e *statusError) Error() string {
	switch {
	case e.code == http.StatusGone:
		return "the receiver answered 410 Gone; the endpoint is disabled and the delivery ends"
	case e.code >= 300 && e.code < 400:
		return fmt.Sprintf("the receiver answered %d %s; redirects are not followed", e.code, http.StatusText(e.code))
	}
	return fmt.Sprintf("the receiver answered %d %s", e.code, http.StatusText(e.code))
}

// maxRetryAfter bounds a Retry-After before it is capped by the schedule,
// so that no arithmetic on it overflows.
const maxRetryAfter = 365 * 24 * time.Hour

// ParseRetryAfter reads a Retry-After header, delta-seconds or HTTP date
// (RFC 9110 §10.2.3), as a delay from now, at most a year. A date in the
// past is 0 (retry now); a negative or unreadable value is ignored (ok
// false): for an attempt, the normal schedule applies.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, false
		}
		if n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}

// internalError hides a store failure's text from the row, which tenants
// read; the cause goes to Temporal's history and the worker's log.
type internalError struct {
	what string
	err  error
}

func (e *internalError) Error() string { return e.what + ": " + e.err.Error() }
func (e *internalError) Unwrap() error { return e.err }

// failure is what went wrong with an attempt.
type failure struct {
	code    string
	message string
	errType string
	// retry: Temporal tries again, within the workflow's retry policy.
	retry bool
	// retryAfter is the receiver's Retry-After, a lower bound on the delay
	// before the next attempt; 0 when it gave none.
	retryAfter time.Duration
	// disable: the receiver asked (410 Gone) for the endpoint to be disabled.
	disable bool
	// cause is the error classified; it goes to Temporal's history (for
	// operators) and never into the row (which tenants read).
	cause error
}

// counts reports whether the failure counts against the endpoint's health:
// not when the endpoint or event is gone, the endpoint disabled, or
// recordhub itself failed.
func (f *failure) counts() bool {
	switch f.code {
	case models.DeliveryErrEndpointGone, models.DeliveryErrEndpointDisabled, DeliveryErrEventGone, DeliveryErrInternal:
		return false
	}
	return true
}

// expected reports whether the failure is the receiver's doing or the
// tenant's (an answer, a network failure, a refused destination, an
// endpoint or event removed meanwhile), which no operator needs to act on;
// not when recordhub itself failed.
func (f *failure) expected() bool {
	return f.code != DeliveryErrInternal
}

// classify is the one place where an attempt's error becomes a delivery
// error code, a message for the row and a Temporal error type. timedOut
// reports that the attempt's own deadline passed; tlsErr is the TLS
// handshake's failure, seen through httptrace.
func classify(err error, timeout time.Duration, timedOut bool, tlsErr error) failure {
	f := classifyCause(err, timeout, timedOut, tlsErr)
	f.cause = err
	return f
}

func classifyCause(err error, timeout time.Duration, timedOut bool, tlsErr error) failure {
	var (
		auth      *authError
		blocked   *blockedError
		status    *statusError
		internal  *internalError
		brokerErr *brokerError
		dnsErr    *net.DNSError
		netErr    net.Error
	)
	switch {
	case errors.As(err, &auth) && auth.blocked != nil:
		return failure{code: models.DeliveryErrBlockedDestination, message: auth.message, errType: ErrTypeBlockedDestination}
	case errors.As(err, &auth):
		// Retried on the schedule: the token endpoint may be back, or its
		// client fixed, by the next attempt.
		return failure{code: models.DeliveryErrAuthFailed, message: auth.message, errType: ErrTypeDeliveryFailed, retry: true}
	case errors.As(err, &blocked):
		return failure{code: models.DeliveryErrBlockedDestination, message: blocked.Error(), errType: ErrTypeBlockedDestination}
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedNetwork), errors.Is(err, ssrf.ErrProhibitedPort):
		return failure{code: models.DeliveryErrBlockedDestination, message: "blocked destination", errType: ErrTypeBlockedDestination}
	case errors.Is(err, errEndpointGone):
		return failure{code: models.DeliveryErrEndpointGone, message: err.Error(), errType: ErrTypeEndpointGone}
	case errors.Is(err, errEndpointDisabled):
		return failure{code: models.DeliveryErrEndpointDisabled, message: err.Error(), errType: ErrTypeEndpointDisabled}
	case errors.Is(err, errEventGone):
		return failure{code: DeliveryErrEventGone, message: err.Error(), errType: ErrTypeEventGone}
	case errors.As(err, &brokerErr):
		return failure{code: brokerErr.code, message: brokerErr.message, errType: ErrTypeDeliveryFailed, retry: true}
	case errors.As(err, &internal):
		return failure{code: DeliveryErrInternal, message: "recordhub could not " + internal.what + "; the attempt will be retried", errType: ErrTypeStore, retry: true}
	case errors.As(err, &status) && status.code == http.StatusGone:
		// The row keeps http_status and the 410, like any other answer;
		// the message and the disabled endpoint say what followed.
		return failure{code: models.DeliveryErrHTTPStatus, message: status.Error(), errType: ErrTypeReceiverGone, disable: true}
	case errors.As(err, &status):
		return failure{code: models.DeliveryErrHTTPStatus, message: status.Error(), errType: ErrTypeDeliveryFailed, retry: true, retryAfter: status.retryAfter}
	case timedOut, errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return failure{code: models.DeliveryErrTimeout, message: "no response within " + timeout.String(), errType: ErrTypeDeliveryFailed, retry: true}
	case errors.Is(err, context.Canceled):
		return failure{code: DeliveryErrCanceled, message: "the attempt was canceled", errType: ErrTypeDeliveryFailed, retry: true}
	case errors.As(err, &dnsErr):
		// Not dnsErr.Error(): it names the resolver, which is ours, not the tenant's.
		return failure{code: models.DeliveryErrDNS, message: fmt.Sprintf("could not resolve %s: %s", dnsErr.Name, dnsErr.Err), errType: ErrTypeDeliveryFailed, retry: true}
	case errors.Is(err, syscall.ECONNREFUSED):
		return failure{code: models.DeliveryErrConnectionRefused, message: "connection refused", errType: ErrTypeDeliveryFailed, retry: true}
	case tlsErr != nil || isTLSError(err):
		cause := tlsErr
		if cause == nil {
			cause = err
		}
		return failure{code: models.DeliveryErrTLS, message: "TLS handshake failed: " + innermost(cause), errType: ErrTypeDeliveryFailed, retry: true}
	default:
		return failure{code: models.DeliveryErrConnection, message: connectionMessage(err), errType: ErrTypeDeliveryFailed, retry: true}
	}
}

func isTLSError(err error) bool {
	var (
		rec     tls.RecordHeaderError
		alert   tls.AlertError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		op      *net.OpError
	)
	// crypto/tls reports an alert the peer sent (a receiver that wants a
	// client certificate, say) as a "remote error".
	return errors.As(err, &rec) || errors.As(err, &alert) || errors.As(err, &verify) ||
		errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) ||
		errors.As(err, &op) && op.Op == "remote error"
}

// connectionMessage describes a connection that failed after it was made,
// without the worker's own address that net.OpError carries.
func connectionMessage(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the receiver closed the connection without a complete answer"
	case errors.As(err, &op):
		return "connection failed: " + op.Err.Error()
	}
	return innermost(err)
}

// innermost drops the "Post \"url\": dial tcp ...:" prefixes that repeat
// what the row already says.
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		if _, ok := err.(*net.OpError); ok {
			return err.Error()
		}
		err = next
	}
}
