package inbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// Header names, canonical as http.Header keeps them.
const (
	headerSignature    = "X-Webhook-Signature"
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
		return verifyHex(headerSignature, secret, h, body)
	case SchemeGitHub:
		return verifyHex(headerGitHub, secret, h, body)
	case SchemeStandard:
		return verifyStandard(secret, h, body, now)
	default:
		return fail("unknown signature scheme " + quote(string(scheme)))
	}
}

// verifyHex checks a "sha256=<hex>" header, GitHub's format, which recordhub
// also sends in X-Webhook-Signature.
func verifyHex(name, secret string, h http.Header, body []byte) error {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return fail("missing " + name + " header")
	}
	digits, ok := strings.CutPrefix(v, "sha256=")
	// Checking the length first also bounds the work on a long header.
	if !ok || len(digits) != 2*sha256.Size {
		return fail(name + " must be sha256=<64 hex digits>")
	}
	sent, err := hex.DecodeString(digits) // either case
	if err != nil {
		return fail(name + " must be sha256=<64 hex digits>")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(sent, mac.Sum(nil)) {
		return fail("signature does not match")
	}
	return nil
}

// quote bounds and quotes a caller-supplied value for a message.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "..."
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}
