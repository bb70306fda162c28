package inbound

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/recordhub/recordhub/models"
)

// Bounds on what a Standard Webhooks call may make us read and hash.
const (
	maxStdID         = 256
	maxStdTimestamp  = 19 // digits: any int64 number of seconds
	maxStdSignatures = 4096
	maxStdEntries    = 10
)

// verifyStandard checks a Standard Webhooks call.
func verifyStandard(secret string, h http.Header, body []byte, now time.Time) error {
	sh, err := parseStandard(h, now)
	if err != nil {
		return err
	}
	for _, key := range standardKeys(secret) {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(sh.id + "." + sh.ts + "."))
		mac.Write(body)
		sum := mac.Sum(nil)
		for _, sent := range sh.sigs {
			if hmac.Equal(sent, sum) {
				return nil
			}
		}
	}
	return fail("signature does not match")
}

// standardHeaders are the signed id and timestamp of a Standard Webhooks
// call, as sent, and the well-formed v1 signatures among its first entries.
type standardHeaders struct {
	id, ts string
	sigs   [][]byte
}

// parseStandard reads and checks a Standard Webhooks call's headers. A call
// with no well-formed v1 signature cannot match, whatever its body.
func parseStandard(h http.Header, now time.Time) (standardHeaders, error) {
	var sh standardHeaders
	sh.id = h.Get(headerStdID)
	switch {
	case sh.id == "":
		return sh, fail("missing webhook-id header")
	case len(sh.id) > maxStdID:
		return sh, fail(fmt.Sprintf("webhook-id must be at most %d characters", maxStdID))
	}
	sh.ts = h.Get(headerStdTimestamp)
	if sh.ts == "" {
		return sh, fail("missing webhook-timestamp header")
	}
	sec, ok := parseSeconds(sh.ts)
	if !ok {
		return sh, fail("webhook-timestamp must be unix seconds")
	}
	if at := time.Unix(sec, 0); now.Sub(at) > Tolerance || at.Sub(now) > Tolerance {
		return sh, fail(fmt.Sprintf("webhook-timestamp is outside the %d-minute tolerance", int(Tolerance.Minutes())))
	}
	sigs := h.Get(headerStdSignature)
	switch {
	case strings.TrimSpace(sigs) == "":
		return sh, fail("missing webhook-signature header")
	case len(sigs) > maxStdSignatures:
		return sh, fail(fmt.Sprintf("webhook-signature must be at most %d characters", maxStdSignatures))
	}
	v1 := false
	entries := 0
	for entry := range strings.FieldsSeq(sigs) {
		if entries++; entries > maxStdEntries {
			break
		}
		version, sig, _ := strings.Cut(entry, ",")
		if version != "v1" {
			continue // another scheme version, for receivers that know it
		}
		v1 = true
		sent, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && len(sent) == sha256.Size {
			sh.sigs = append(sh.sigs, sent)
		}
	}
	switch {
	case !v1:
		return sh, fail(`webhook-signature has no "v1,<base64>" entry`)
	case len(sh.sigs) == 0:
		return sh, fail("signature does not match")
	}
	return sh, nil
}

// parseSeconds reads unsigned decimal seconds. strconv.ParseInt alone would
// also take a sign, and the timestamp is signed exactly as sent.
func parseSeconds(ts string) (int64, bool) {
	if len(ts) > maxStdTimestamp {
		return 0, false
	}
	for i := range len(ts) {
		if ts[i] < '0' || ts[i] > '9' {
			return 0, false
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	return sec, err == nil
}

// standardKeys returns the HMAC keys a secret may sign with, first the one
// recordhub's own outbound signer uses (models.StandardWebhooksKey), so that
// an inbound webhook given an endpoint's secret as recordhub answered it
// verifies that endpoint's deliveries. Then, for other senders, the forms
// accepted before: the secret's UTF-8 bytes, and what follows "whsec_"
// decoded as standard base64, padded or not, of any length (Svix and the
// reference libraries hand out "whsec_<base64>" and key with the decoded
// bytes).
func standardKeys(secret string) [][]byte {
	keys := [][]byte{models.StandardWebhooksKey(secret)}
	add := func(key []byte) {
		for _, k := range keys {
			if bytes.Equal(k, key) {
				return
			}
		}
		keys = append(keys, key)
	}
	add([]byte(secret))
	if rest, ok := strings.CutPrefix(secret, models.PrefixWebhookSecret); ok {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			if key, err := enc.DecodeString(rest); err == nil && len(key) > 0 {
				add(key)
				break
			}
		}
	}
	return keys
}
