package client

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// IdempotencyKeyHeader is the header that names a write, so that the
// server, having seen the name, answers the write's first outcome again
// instead of applying it twice (api/README.md, "Idempotency").
const IdempotencyKeyHeader = "Idempotency-Key"

// DefaultMaxRetryWait caps one wait between two tries of a request of a
// Client built without WithMaxRetryWait.
const DefaultMaxRetryWait = 30 * time.Second

// firstBackoff is the wait before the first retry when the answer named
// none (a broken connection, a 503 without Retry-After); it doubles with
// each retry, up to the client's cap.
const firstBackoff = 250 * time.Millisecond

// WithRetries has the client send a request again, up to n more times,
// after a 429 or a 503 (waiting the answer's Retry-After, capped by
// WithMaxRetryWait) or when it got no answer (a *TransportError, after a
// doubling backoff from 250ms), and a write with an Idempotency-Key after
// a 409 with Retry-After (the server is still running the write's first
// try under that key) — but only a request that is safe to
// repeat: a GET, HEAD or DELETE always, a POST or PATCH only when it
// carries an Idempotency-Key (WithIdempotencyKeys, IdempotencyKey). A
// POST without one that broke mid-way may have been applied, so it comes
// back to the caller; a DELETE without one whose first try was applied
// answers its retry not_found. Without WithRetries the client sends each request once
// and leaves retrying to the caller (Transient, Error.RetryAfter).
func WithRetries(n int) Option {
	return func(c *Client) { c.retries = max(n, 0) }
}

// WithMaxRetryWait caps the wait before a retry (DefaultMaxRetryWait
// otherwise): a longer Retry-After is waited for only that long.
func WithMaxRetryWait(d time.Duration) Option {
	return func(c *Client) { c.maxWait = max(d, 0) }
}

// WithIdempotencyKeys has the client send every POST, PATCH and DELETE
// with an Idempotency-Key header: a random value made once per call and
// sent again on each of its retries, so that WithRetries may repeat writes
// too. The server applies a write sent with a key at most once however
// many times it arrives, and answers each repeat with the first answer
// (marked Idempotent-Replayed) for 24 hours by default. A key set on the
// call's context with IdempotencyKey takes precedence.
func WithIdempotencyKeys() Option {
	return func(c *Client) { c.idempotencyKeys = true }
}

type idempotencyKeyOf struct{}

// IdempotencyKey returns a context whose POST, PATCH or DELETE carries key
// as its Idempotency-Key: the caller's own name for one write (an order
// number, say), kept across its own retries and restarts. A key names one
// write: give each write a context of its own (the server refuses a key
// sent again with another write, Error code idempotency_key_reused).
func IdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKeyOf{}, key)
}

// idempotencyKey is the Idempotency-Key of a request: the context's, else
// a new one when the client sends keys; none but on POST, PATCH and DELETE.
func (c *Client) idempotencyKey(ctx context.Context, method string) string {
	if method != http.MethodPost && method != http.MethodPatch && method != http.MethodDelete {
		return ""
	}
	if k, ok := ctx.Value(idempotencyKeyOf{}).(string); ok && k != "" {
		return k
	}
	if c.idempotencyKeys {
		return newIdempotencyKey()
	}
	return ""
}

// newIdempotencyKey is a UUID of version 7 (RFC 9562): the time in
// milliseconds, then random bits. Keys made later sort later, so the
// server files each next key beside the last one instead of at a random
// place of its index of keys, which on SQLite saves every keyed write a
// page of its own.
func newIdempotencyKey() string {
	u, err := uuid.NewV7()
	if err != nil { // only when crypto/rand fails, which it does not
		return uuid.NewString()
	}
	return u.String()
}

// retryAfter says whether a request that ended with err on try (from 0)
// is sent again, and after how long.
func (c *Client) retryAfter(ctx context.Context, method, idemKey string, try int, err error) (time.Duration, bool) {
	if err == nil || try >= c.retries || ctx.Err() != nil {
		return 0, false
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
	case http.MethodPost, http.MethodPatch:
		if idemKey == "" {
			return 0, false
		}
	default:
		return 0, false
	}
	backoff := min(firstBackoff<<min(try, 16), c.maxWait)
	var te *TransportError
	if errors.As(err, &te) {
		return backoff, true
	}
	var e *Error
	if !errors.As(err, &e) {
		return 0, false
	}
	switch {
	case e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable:
		if e.RetryAfter > 0 {
			return min(e.RetryAfter, c.maxWait), true
		}
		return backoff, true
	case e.Status == http.StatusConflict && idemKey != "" && e.RetryAfter > 0:
		// The write's first try, under the same key, is still running on
		// the server: its outcome will be answered to a later try. A 409
		// without Retry-After is a real conflict, the same on every try.
		return min(e.RetryAfter, c.maxWait), true
	}
	return 0, false
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
