package activities

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// Request headers of an outbound webhook.
const (
	HeaderSignature = "X-Webhook-Signature"
	HeaderEvent     = "X-Webhook-Event"
	HeaderID        = "X-Webhook-Id"
	HeaderAttempt   = "X-Webhook-Attempt"
	HeaderTimestamp = "X-Webhook-Timestamp"
	// Standard Webhooks (standardwebhooks.com).
	HeaderStdID        = "Webhook-Id"
	HeaderStdTimestamp = "Webhook-Timestamp"
	HeaderStdSignature = "Webhook-Signature"
)

// signedMessage is what one attempt sends; the signatures cover Body byte
// for byte.
type signedMessage struct {
	EventID   string
	EventType string
	Attempt   int
	Timestamp int64
	Body      []byte
	UserAgent string
}

// setHeaders writes the content, identity and signature headers of m into h.
//
// Both schemes are keyed with the secret's UTF-8 bytes,
// "whsec_" prefix included. Standard Webhooks libraries instead strip
// "whsec_" and base64-decode the rest; our secrets are opaque strings (and
// may be chosen by the user), so receivers using such a library must hand it
// the raw secret bytes (in the Go library: NewWebhookRaw([]byte(secret))).
//
// During a rotation grace (previous != "") both secrets sign
// Webhook-Signature: "v1,<current> v1,<previous>", the list format that
// scheme defines, so a receiver holding either secret verifies. The
// X-Webhook-Signature header keeps one value, the current secret's digest:
// it is GitHub's single "sha256=<hex>" format, which receivers (recordhub's
// own inbound webhooks among them) compare as a whole, and a second,
// comma-separated digest would break every such receiver for the whole grace
// period. Receivers that must ride through a rotation without a gap verify
// Webhook-Signature, or try both secrets against X-Webhook-Signature once
// they hold the new one.
func setHeaders(h http.Header, m signedMessage, current, previous string) {
	ts := strconv.FormatInt(m.Timestamp, 10)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", m.UserAgent)
	h.Set(HeaderEvent, m.EventType)
	h.Set(HeaderID, m.EventID)
	h.Set(HeaderAttempt, strconv.Itoa(m.Attempt))
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, "sha256="+hexSignature(current, m.Body))
	h.Set(HeaderStdID, m.EventID)
	h.Set(HeaderStdTimestamp, ts)
	sigs := []string{"v1," + standardSignature(current, m.EventID, ts, m.Body)}
	if previous != "" {
		sigs = append(sigs, "v1,"+standardSignature(previous, m.EventID, ts, m.Body))
	}
	h.Set(HeaderStdSignature, strings.Join(sigs, " "))
}

// hexSignature is the lowercase hex HMAC-SHA256 of body.
func hexSignature(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// standardSignature is the base64 HMAC-SHA256 of "<id>.<timestamp>.<body>".
func standardSignature(secret, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
