package activities

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/recordhub/recordhub/models"
)

// Request headers of an outbound webhook.
const (
	HeaderSignature = "X-Webhook-Signature"
	// HeaderSignaturePrevious is sent only during a rotation's grace
	// period: HeaderSignature's digest made with the previous secret.
	HeaderSignaturePrevious = "X-Webhook-Signature-Previous"
	HeaderEvent             = "X-Webhook-Event"
	HeaderID                = "X-Webhook-Id"
	HeaderAttempt           = "X-Webhook-Attempt"
	HeaderTimestamp         = "X-Webhook-Timestamp"
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
// X-Webhook-Signature is "sha256=<lowercase hex HMAC-SHA256 of the body>"
// keyed with the secret string's UTF-8 bytes, "whsec_" included: what
// `openssl dgst -sha256 -hmac "$SECRET"` computes from the secret as the
// admin API answers it. It is GitHub's single-digest format, which receivers
// compare whole, so it carries the current secret's digest alone.
//
// Webhook-Signature is Standard Webhooks' "v1,<base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>">", keyed with models.StandardWebhooksKey: the
// decoded bytes of a "whsec_<base64>" secret, as the receivers' libraries
// key it, or the UTF-8 bytes of a secret in an older form, as it was always
// signed.
//
// During a rotation's grace period (previous != "") a receiver holding
// either secret must verify both schemes: X-Webhook-Signature-Previous
// carries the previous secret's hex digest, and Webhook-Signature the list
// "v1,<current> v1,<previous>", each keyed by the rule above for its own
// secret.
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
	sigs := []string{"v1," + standardSignature(models.StandardWebhooksKey(current), m.EventID, ts, m.Body)}
	if previous != "" {
		h.Set(HeaderSignaturePrevious, "sha256="+hexSignature(previous, m.Body))
		sigs = append(sigs, "v1,"+standardSignature(models.StandardWebhooksKey(previous), m.EventID, ts, m.Body))
	}
	h.Set(HeaderStdSignature, strings.Join(sigs, " "))
}

// hexSignature is the lowercase hex HMAC-SHA256 of body keyed with the
// secret string's UTF-8 bytes.
func hexSignature(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// standardSignature is the base64 HMAC-SHA256 of "<id>.<timestamp>.<body>".
func standardSignature(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
