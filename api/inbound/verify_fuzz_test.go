package inbound_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api/inbound"
)

// FuzzVerify puts arbitrary values in each signed header and checks that
// Verify never panics and accepts only what an independent reading of the
// schemes says is correctly signed.
func FuzzVerify(f *testing.F) {
	const id = "msg_1"
	ts := strconv.FormatInt(now.Unix(), 10)
	for _, seed := range []struct{ value, body string }{
		{"sha256=" + hexMAC(secret, body), body},
		{"sha256=" + strings.ToUpper(hexMAC(secret, body)), body},
		{"sha256=" + hexMAC(secret, body), body + " "},
		{"v1," + stdMAC([]byte(secret), id, ts, body), body},
		{"v1a,x v1," + stdMAC([]byte(secret), id, ts, body), body},
		{ts, body},
		{"", ""},
		{"sha256=zz", "x"},
		{"v1," + strings.Repeat("A", 43) + "=", ""},
	} {
		f.Add(seed.value, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, value string, b []byte) {
		// The value as the signature of each scheme.
		for _, s := range []struct {
			scheme inbound.Scheme
			header string
		}{
			{inbound.SchemeSHA256, "X-Webhook-Signature"},
			{inbound.SchemeGitHub, "X-Hub-Signature-256"},
		} {
			h := http.Header{}
			h.Set(s.header, value)
			err := inbound.Verify(s.scheme, secret, h, b, now)
			if valid := hexSigned(value, b); (err == nil) != valid {
				t.Fatalf("Verify(%s, %q) = %v; an independent check says valid=%v", s.scheme, value, err, valid)
			}
			if checked := inbound.CheckHeaders(s.scheme, h, now); checked != nil && (err == nil || err.Error() != checked.Error()) {
				t.Fatalf("CheckHeaders(%s, %q) = %v, Verify = %v", s.scheme, value, checked, err)
			}
		}
		h := http.Header{}
		h.Set("Webhook-Id", id)
		h.Set("Webhook-Timestamp", ts)
		h.Set("Webhook-Signature", value)
		err := inbound.Verify(inbound.SchemeStandard, secret, h, b, now)
		if valid := stdSigned(value, id, ts, b); (err == nil) != valid {
			t.Fatalf("Verify(standard, signature %q) = %v; an independent check says valid=%v", value, err, valid)
		}
		// What the headers alone refuse, Verify refuses alike.
		if checked := inbound.CheckHeaders(inbound.SchemeStandard, h, now); checked != nil && (err == nil || err.Error() != checked.Error()) {
			t.Fatalf("CheckHeaders(standard, signature %q) = %v, Verify = %v", value, checked, err)
		}

		// The value as the timestamp, correctly signed.
		h = http.Header{}
		h.Set("Webhook-Id", id)
		h.Set("Webhook-Timestamp", value)
		h.Set("Webhook-Signature", "v1,"+stdMAC([]byte(secret), id, h.Get("Webhook-Timestamp"), string(b)))
		err = inbound.Verify(inbound.SchemeStandard, secret, h, b, now)
		if valid := timely(h.Get("Webhook-Timestamp")); (err == nil) != valid {
			t.Fatalf("Verify(standard, timestamp %q) = %v; an independent check says valid=%v", value, err, valid)
		}
	})
}

// hexSigned reports whether value is "sha256=" and the digest of b.
func hexSigned(value string, b []byte) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(b)
	return strings.EqualFold(strings.TrimSpace(value), "sha256="+hex.EncodeToString(mac.Sum(nil))) &&
		strings.HasPrefix(strings.TrimSpace(value), "sha256=")
}

// stdSigned reports whether one of the first ten entries of value is a v1
// entry carrying the Standard Webhooks MAC of b. It decodes rather than
// compares text because base64 has several spellings of the same bytes.
func stdSigned(value, id, ts string, b []byte) bool {
	if len(value) > 4096 {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(b)
	want := mac.Sum(nil)
	entries := strings.Fields(value)
	for _, e := range entries[:min(len(entries), 10)] {
		if sig, ok := strings.CutPrefix(e, "v1,"); ok {
			if got, err := base64.StdEncoding.DecodeString(sig); err == nil && bytes.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

// timely reports whether ts is plain unix seconds within the tolerance.
func timely(ts string) bool {
	if ts == "" || strings.TrimLeft(ts, "0123456789") != "" {
		return false
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	d := time.Unix(sec, 0).Sub(now)
	return -inbound.Tolerance <= d && d <= inbound.Tolerance
}
