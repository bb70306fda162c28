package inbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Header names, canonical as http.Header keeps them.
const (
	headerSignature    = "X-Webhook-Signature"
	headerPrevious     = "X-Webhook-Signature-Previous"
	headerGitHub       = "X-Hub-Signature-256"
	headerStdID        = "Webhook-Id"
	headerStdTimestamp = "Webhook-Timestamp"
	headerStdSignature = "Webhook-Signature"
)

// Error is a verification failure. Message tells the sender what is wrong
// and is safe to show: it never includes the expected digest.
type Error struct{ Message string }

func (e *Error) Error() string { return e.Message }

func fail(msg string) error { return &Error{Message: msg} }

// Verify checks the signature of body under scheme with secret. It returns
// nil when valid and an *Error otherwise.
func Verify(scheme Scheme, secret string, h http.Header, body []byte, now time.Time) error {
	if secret == "" {
		// An empty HMAC key is one anybody can sign with.
		return fail("the webhook has no signing secret")
	}
	switch scheme {
	case SchemeSHA256:
		return verifyHex(headerSignature, headerPrevious, secret, h, body)
	case SchemeGitHub:
		return verifyHex(headerGitHub, "", secret, h, body)
	case SchemeStandard:
		return verifyStandard(secret, h, body, now)
	default:
		return fail("unknown signature scheme " + quote(string(scheme)))
	}
}

// CheckHeaders checks what of a call's signature needs no body and no
// secret: the headers are there and well formed and, for Standard Webhooks,
// the timestamp is within Tolerance. A call it refuses, Verify refuses with
// the same error, so a receiver can refuse it without reading the body; a
// call it passes may still fail Verify.
func CheckHeaders(scheme Scheme, h http.Header, now time.Time) error {
	var err error
	switch scheme {
	case SchemeSHA256:
		_, err = parseHex(headerSignature, h)
	case SchemeGitHub:
		_, err = parseHex(headerGitHub, h)
	case SchemeStandard:
		_, err = parseStandard(h, now)
	default:
		err = fail("unknown signature scheme " + quote(string(scheme)))
	}
	return err
}

// MessageID returns the id of a call that Verify accepted, taken only from
// what its signature covers, so that retries of one message are recognised
// and nobody without the secret can make a captured call look new.
// Standard Webhooks signs webhook-id, which a sender keeps when it retries
// (with a fresh timestamp): the id is webhook-id. The sha256 and github
// schemes sign the body alone, and no header (Idempotency-Key,
// X-GitHub-Delivery, a timestamp) with it: the id is "sha256:" and the hex
// SHA-256 of the body. A sender that means two messages sends two bodies
// (recordhub's own events carry their event id and time); the same signed
// bytes sent again are the same message.
func MessageID(scheme Scheme, h http.Header, body []byte) string {
	if scheme == SchemeStandard {
		id := h.Get(headerStdID)
		if utf8.ValidString(id) {
			return id
		}
		// Kept as text by the store: an id of other bytes is kept by digest.
		sum := sha256.Sum256([]byte(id))
		return "webhook-id-sha256:" + hex.EncodeToString(sum[:])
	}
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// verifyHex checks a "sha256=<hex>" header, GitHub's format, which recordhub
// also sends in X-Webhook-Signature. When also is not empty, a well-formed
// digest in that header verifies too: recordhub sends its previous secret's
// digest in X-Webhook-Signature-Previous during a rotation's grace period,
// so a receiver still holding the previous secret rides through the
// sender's rotation. Both headers sign the body alone, so MessageID is the
// same whichever verified.
func verifyHex(name, also, secret string, h http.Header, body []byte) error {
	sent, err := parseHex(name, h)
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	sum := mac.Sum(nil)
	if hmac.Equal(sent, sum) {
		return nil
	}
	if also != "" && h.Get(also) != "" {
		if other, err := parseHex(also, h); err == nil && hmac.Equal(other, sum) {
			return nil
		}
	}
	return fail("signature does not match")
}

// parseHex reads the digest of a "sha256=<hex>" header.
func parseHex(name string, h http.Header) ([]byte, error) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return nil, fail("missing " + name + " header")
	}
	digits, ok := strings.CutPrefix(v, "sha256=")
	// Checking the length first also bounds the work on a long header.
	if !ok || len(digits) != 2*sha256.Size {
		return nil, fail(name + " must be sha256=<64 hex digits>")
	}
	sent, err := hex.DecodeString(digits) // either case
	if err != nil {
		return nil, fail(name + " must be sha256=<64 hex digits>")
	}
	return sent, nil
}

// quote bounds and quotes a caller-supplied value for a message.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "..."
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}
