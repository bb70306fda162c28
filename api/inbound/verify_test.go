package inbound_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/recordhub/recordhub/api/inbound"
	"github.com/recordhub/recordhub/models"
)

const (
	secret = "s3cret-key"
	body   = `{"event":"order.created","id":42}`
)

var now = time.Unix(1_760_000_000, 0)

// hexMAC is the digest of the sha256 and github schemes, computed here
// independently of the package.
func hexMAC(key string, b string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(b))
	return hex.EncodeToString(mac.Sum(nil))
}

// stdMAC is a Standard Webhooks signature with an explicit key.
func stdMAC(key []byte, id, ts, b string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + b))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// checkErr fails t unless err is nil when want is empty, or an *Error whose
// message contains want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("Verify = %v, want nil", err)
		}
		return
	}
	var e *inbound.Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify = %v (%T), want an *inbound.Error", err, err)
	}
	if !strings.Contains(e.Message, want) {
		t.Errorf("Verify = %q, want a message containing %q", e.Message, want)
	}
}

func TestVerifyHex(t *testing.T) {
	good := hexMAC(secret, body)
	tests := []struct {
		name   string
		header string // the value sent; "-" for no header
		secret string
		body   string
		want   string // part of the message; "" when valid
	}{
		{"valid", "sha256=" + good, secret, body, ""},
		{"uppercase hex", "sha256=" + strings.ToUpper(good), secret, body, ""},
		{"surrounding space", " sha256=" + good + " ", secret, body, ""},
		{"wrong secret", "sha256=" + good, "other", body, "signature does not match"},
		{"body changed by one byte", "sha256=" + good, secret, body[:len(body)-2] + "3}", "signature does not match"},
		{"empty body", "sha256=" + good, secret, "", "signature does not match"},
		{"missing", "-", secret, body, "missing"},
		{"empty", "", secret, body, "missing"},
		{"no prefix", good, secret, body, "must be sha256=<64 hex digits>"},
		{"other algorithm", "sha1=" + good, secret, body, "must be sha256="},
		{"uppercase prefix", "SHA256=" + good, secret, body, "must be sha256="},
		{"prefix only", "sha256=", secret, body, "must be sha256="},
		{"non-hex", "sha256=" + strings.Repeat("zz", 32), secret, body, "must be sha256="},
		{"odd length", "sha256=" + good[:63], secret, body, "must be sha256="},
		{"truncated", "sha256=" + good[:62], secret, body, "must be sha256="},
		{"two digests", "sha256=" + good + ",sha256=" + good, secret, body, "must be sha256="},
		{"empty secret", "sha256=" + hexMAC("", body), "", body, "no signing secret"},
	}
	for _, scheme := range []struct {
		scheme inbound.Scheme
		header string
		other  string
	}{
		{inbound.SchemeSHA256, "x-webhook-signature", "X-Hub-Signature-256"},
		{inbound.SchemeGitHub, "x-hub-signature-256", "X-Webhook-Signature"},
	} {
		for _, tt := range tests {
			t.Run(string(scheme.scheme)+"/"+tt.name, func(t *testing.T) {
				h := http.Header{}
				if tt.header != "-" {
					h.Set(scheme.header, tt.header)
				}
				err := inbound.Verify(scheme.scheme, tt.secret, h, []byte(tt.body), now)
				want := tt.want
				if want == "missing" || strings.HasPrefix(want, "must be") {
					want = http.CanonicalHeaderKey(scheme.header)
				}
				checkErr(t, err, want)
			})
		}
		t.Run(string(scheme.scheme)+"/other scheme's header", func(t *testing.T) {
			h := http.Header{}
			h.Set(scheme.other, "sha256="+good)
			checkErr(t, inbound.Verify(scheme.scheme, secret, h, []byte(body), now), "missing "+http.CanonicalHeaderKey(scheme.header))
		})
	}
}

// TestVerifyPrevious: the sha256 scheme also accepts the digest in
// X-Webhook-Signature-Previous, which a recordhub sender adds with its
// previous secret during a rotation's grace period; github does not.
func TestVerifyPrevious(t *testing.T) {
	const newer = "the-senders-new-secret"
	tests := []struct {
		name    string
		scheme  inbound.Scheme
		headers []string
		want    string
	}{
		{"previous matches", inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=" + hexMAC(newer, body), "X-Webhook-Signature-Previous", "sha256=" + hexMAC(secret, body)}, ""},
		{"current matches, previous other", inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=" + hexMAC(secret, body), "X-Webhook-Signature-Previous", "sha256=" + hexMAC(newer, body)}, ""},
		{"current matches, previous malformed", inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=" + hexMAC(secret, body), "X-Webhook-Signature-Previous", "zz"}, ""},
		{"neither matches", inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=" + hexMAC(newer, body), "X-Webhook-Signature-Previous", "sha256=" + hexMAC("other", body)}, "signature does not match"},
		{"previous malformed, current other", inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=" + hexMAC(newer, body), "X-Webhook-Signature-Previous", hexMAC(secret, body)}, "signature does not match"},
		{"previous alone", inbound.SchemeSHA256, []string{"X-Webhook-Signature-Previous", "sha256=" + hexMAC(secret, body)}, "missing X-Webhook-Signature"},
		{"previous of another body", inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=" + hexMAC(newer, body), "X-Webhook-Signature-Previous", "sha256=" + hexMAC(secret, "{}")}, "signature does not match"},
		{"github ignores it", inbound.SchemeGitHub, []string{"X-Hub-Signature-256", "sha256=" + hexMAC(newer, body), "X-Webhook-Signature-Previous", "sha256=" + hexMAC(secret, body)}, "signature does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tt.headers); i += 2 {
				h.Set(tt.headers[i], tt.headers[i+1])
			}
			checkErr(t, inbound.Verify(tt.scheme, secret, h, []byte(body), now), tt.want)
		})
	}
}

func TestVerifyStandard(t *testing.T) {
	const id = "msg_2Kd4Vx"
	key := []byte("0123456789abcdef0123456789abcdef")
	whsec := "whsec_" + base64.StdEncoding.EncodeToString(key)
	whsecRaw := "whsec_" + base64.RawStdEncoding.EncodeToString(key[:31]) // 31 bytes: padding differs
	ts := strconv.FormatInt(now.Unix(), 10)
	at := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	sig := func(key []byte, ts string) string { return "v1," + stdMAC(key, id, ts, body) }
	good := sig([]byte(secret), ts)

	tests := []struct {
		name   string
		secret string
		id     string // "-" for no header, as for ts and sigs
		ts     string
		sigs   string
		body   string
		want   string
	}{
		{"valid", secret, id, ts, good, body, ""},
		{"wrong secret", "other", id, ts, good, body, "signature does not match"},
		{"body changed by one byte", secret, id, ts, good, body[:len(body)-2] + "3}", "signature does not match"},
		{"id changed", secret, id + "x", ts, good, body, "signature does not match"},
		{"second entry matches", secret, id, ts, sig([]byte("old"), ts) + " " + good, body, ""},
		{"extra spaces", secret, id, ts, "  " + sig([]byte("old"), ts) + "   " + good + " ", body, ""},
		{"v1a entry ignored", secret, id, ts, "v1a," + stdMAC([]byte(secret), id, ts, body), body, `no "v1,<base64>" entry`},
		{"v1a then v1", secret, id, ts, "v1a,abc " + good, body, ""},
		{"v2 entry ignored", secret, id, ts, "v2," + stdMAC([]byte(secret), id, ts, body), body, `no "v1,<base64>" entry`},
		{"no comma", secret, id, ts, "v1" + stdMAC([]byte(secret), id, ts, body), body, `no "v1,<base64>" entry`},
		{"bad base64", secret, id, ts, "v1,!!!", body, "signature does not match"},
		{"unpadded base64", secret, id, ts, strings.TrimRight(good, "="), body, "signature does not match"},
		{"hex instead of base64", secret, id, ts, "v1," + hexMAC(secret, id+"."+ts+"."+body), body, "signature does not match"},
		{"match past ten entries ignored", secret, id, ts, strings.Repeat("v1,AAAA ", 10) + good, body, "signature does not match"},
		{"match as tenth entry", secret, id, ts, strings.Repeat("v1,AAAA ", 9) + good, body, ""},
		{"4 minutes old", secret, id, at(-4 * time.Minute), sig([]byte(secret), at(-4*time.Minute)), body, ""},
		{"4 minutes ahead", secret, id, at(4 * time.Minute), sig([]byte(secret), at(4*time.Minute)), body, ""},
		{"6 minutes old", secret, id, at(-6 * time.Minute), sig([]byte(secret), at(-6*time.Minute)), body, "outside the 5-minute tolerance"},
		{"6 minutes ahead", secret, id, at(6 * time.Minute), sig([]byte(secret), at(6*time.Minute)), body, "outside the 5-minute tolerance"},
		{"timestamp in milliseconds", secret, id, ts + "000", sig([]byte(secret), ts+"000"), body, "outside the 5-minute tolerance"},
		{"non-numeric timestamp", secret, id, "soon", sig([]byte(secret), "soon"), body, "unix seconds"},
		{"signed timestamp", secret, id, "+" + ts, sig([]byte(secret), "+"+ts), body, "unix seconds"},
		{"fractional timestamp", secret, id, ts + ".5", sig([]byte(secret), ts+".5"), body, "unix seconds"},
		{"huge timestamp", secret, id, strings.Repeat("9", 19), sig([]byte(secret), strings.Repeat("9", 19)), body, "unix seconds"},
		{"missing id", secret, "-", ts, good, body, "missing webhook-id"},
		{"empty id", secret, "", ts, good, body, "missing webhook-id"},
		{"long id", secret, strings.Repeat("i", 257), ts, good, body, "webhook-id must be at most"},
		{"missing timestamp", secret, id, "-", good, body, "missing webhook-timestamp"},
		{"missing signature", secret, id, ts, "-", body, "missing webhook-signature"},
		{"blank signature", secret, id, ts, "   ", body, "missing webhook-signature"},
		{"long signature header", secret, id, ts, good + strings.Repeat(" ", 4096), body, "webhook-signature must be at most"},
		{"whsec decoded key", whsec, id, ts, sig(key, ts), body, ""},
		{"whsec unpadded decoded key", whsecRaw, id, ts, sig(key[:31], ts), body, ""},
		{"whsec raw bytes, as recordhub signs", whsec, id, ts, sig([]byte(whsec), ts), body, ""},
		{"whsec wrong key", whsec, id, ts, sig(key[1:], ts), body, "signature does not match"},
		{"whsec not base64: raw bytes only", "whsec_!!", id, ts, sig([]byte("whsec_!!"), ts), body, ""},
		{"empty secret", "", id, ts, sig(nil, ts), body, "no signing secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for name, v := range map[string]string{"webhook-id": tt.id, "webhook-timestamp": tt.ts, "webhook-signature": tt.sigs} {
				if v != "-" {
					h.Set(name, v)
				}
			}
			checkErr(t, inbound.Verify(inbound.SchemeStandard, tt.secret, h, []byte(tt.body), now), tt.want)
		})
	}
}

// TestVerifyStandardOutbound checks interop with recordhub's outbound
// signer: webhook-signature keyed with models.StandardWebhooksKey, the
// decoded bytes of a secret in the whsec_<standard base64> form and the
// UTF-8 bytes of one generated before that form, both in one header as
// during a rotation's grace. The headers are rebuilt here the way
// activities.setHeaders writes them.
func TestVerifyStandardOutbound(t *testing.T) {
	const (
		current  = "whsec_cmVjb3JkaHViIGN1cnJlbnQgc2lnbmluZyBrZXkgMzI=" // 32 bytes, standard base64
		previous = "whsec_8PHy8_T19vf4-fr7_P3-__Dx8vP09fb3-Pn6-_z9_v8"  // 43 characters of base64url: generated before
		id       = "01JZ8Q3W9XK2M4N6P8R0T2V4X6"
	)
	currentKey, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(current, "whsec_"))
	if err != nil || len(currentKey) != 32 {
		t.Fatalf("current key: %d bytes, %v", len(currentKey), err)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", ts)
	h.Set("Webhook-Signature", strings.Join([]string{"v1," + stdMAC(currentKey, id, ts, body), "v1," + stdMAC([]byte(previous), id, ts, body)}, " "))
	for _, s := range []string{current, previous} {
		if err := inbound.Verify(inbound.SchemeStandard, s, h, []byte(body), now); err != nil {
			t.Errorf("Verify with %q: %v", s, err)
		}
	}
	checkErr(t, inbound.Verify(inbound.SchemeStandard, "whsec_b3RoZXI=", h, []byte(body), now), "signature does not match")
}

// TestVerifyStandardLibrary: calls signed by the Go Standard Webhooks
// library with a whsec_ secret, one of recordhub's and one of another
// sender's, are accepted with that secret, and refused with another.
func TestVerifyStandardLibrary(t *testing.T) {
	const id = "msg_2Kd4Vx"
	for _, sec := range []string{
		models.NewWebhookSecret(),
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", // 24 bytes, a Svix-style secret
		"whsec_" + base64.StdEncoding.EncodeToString([]byte("sixteen byte key")),
	} {
		wh, err := standardwebhooks.NewWebhook(sec)
		if err != nil {
			t.Fatalf("NewWebhook(%q): %v", sec, err)
		}
		sig, err := wh.Sign(id, now, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		h.Set("webhook-signature", sig)
		checkErr(t, inbound.Verify(inbound.SchemeStandard, sec, h, []byte(body), now), "")
		checkErr(t, inbound.Verify(inbound.SchemeStandard, models.NewWebhookSecret(), h, []byte(body), now), "signature does not match")
	}
}

func TestVerifyUnknownScheme(t *testing.T) {
	h := http.Header{}
	h.Set("X-Webhook-Signature", "sha256="+hexMAC(secret, body))
	checkErr(t, inbound.Verify("sha1", secret, h, []byte(body), now), "unknown signature scheme")
	checkErr(t, inbound.Verify("", secret, h, []byte(body), now), "unknown signature scheme")
}

func TestParseScheme(t *testing.T) {
	tests := []struct {
		in     string
		want   inbound.Scheme
		wantOK bool
	}{
		{"", inbound.SchemeSHA256, true},
		{"sha256", inbound.SchemeSHA256, true},
		{"github", inbound.SchemeGitHub, true},
		{"standard_webhooks", inbound.SchemeStandard, true},
		{"GitHub", "", false},
		{"sha1", "", false},
	}
	for _, tt := range tests {
		got, ok := inbound.ParseScheme(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseScheme(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// CheckHeaders refuses only what Verify refuses, with Verify's message, so
// that a receiver may refuse a call on its headers before reading its body.
func TestCheckHeadersAgreesWithVerify(t *testing.T) {
	ts := strconv.FormatInt(now.Unix(), 10)
	old := strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)
	good := "v1," + stdMAC([]byte(secret), "msg_1", ts, body)
	tests := []struct {
		scheme  inbound.Scheme
		headers []string
		passes  bool // CheckHeaders passes; Verify may still refuse
	}{
		{inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=" + hexMAC(secret, body)}, true},
		{inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=" + hexMAC("other", body)}, true},
		{inbound.SchemeSHA256, nil, false},
		{inbound.SchemeSHA256, []string{"X-Webhook-Signature", "sha256=zz"}, false},
		{inbound.SchemeSHA256, []string{"X-Hub-Signature-256", "sha256=" + hexMAC(secret, body)}, false},
		{inbound.SchemeGitHub, []string{"X-Hub-Signature-256", "sha256=" + hexMAC(secret, body)}, true},
		{inbound.SchemeGitHub, []string{"X-Webhook-Signature", "sha256=" + hexMAC(secret, body)}, false},
		{inbound.SchemeStandard, []string{"Webhook-Id", "msg_1", "Webhook-Timestamp", ts, "Webhook-Signature", good}, true},
		{inbound.SchemeStandard, []string{"Webhook-Id", "msg_2", "Webhook-Timestamp", ts, "Webhook-Signature", good}, true},
		{inbound.SchemeStandard, []string{"Webhook-Id", "msg_1", "Webhook-Timestamp", old, "Webhook-Signature", good}, false},
		{inbound.SchemeStandard, []string{"Webhook-Timestamp", ts, "Webhook-Signature", good}, false},
		{inbound.SchemeStandard, []string{"Webhook-Id", "msg_1", "Webhook-Timestamp", ts, "Webhook-Signature", "v1,!!!"}, false},
		{inbound.SchemeStandard, []string{"Webhook-Id", "msg_1", "Webhook-Timestamp", ts, "Webhook-Signature", "v2,abc"}, false},
		{"sha1", []string{"X-Webhook-Signature", "sha256=" + hexMAC(secret, body)}, false},
	}
	for i, tt := range tests {
		h := http.Header{}
		for j := 0; j+1 < len(tt.headers); j += 2 {
			h.Set(tt.headers[j], tt.headers[j+1])
		}
		checked := inbound.CheckHeaders(tt.scheme, h, now)
		if (checked == nil) != tt.passes {
			t.Errorf("%d: CheckHeaders(%s, %v) = %v, want passing %v", i, tt.scheme, tt.headers, checked, tt.passes)
		}
		if checked == nil {
			continue
		}
		verified := inbound.Verify(tt.scheme, secret, h, []byte(body), now)
		if verified == nil || verified.Error() != checked.Error() {
			t.Errorf("%d: CheckHeaders refused with %v, Verify with %v", i, checked, verified)
		}
	}
}

// MessageID takes a verified call's id only from what its signature covers.
func TestMessageID(t *testing.T) {
	with := func(pairs ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(pairs); i += 2 {
			h.Set(pairs[i], pairs[i+1])
		}
		return h
	}
	sum := sha256.Sum256([]byte(body))
	bodyID := "sha256:" + hex.EncodeToString(sum[:])
	tests := []struct {
		scheme inbound.Scheme
		h      http.Header
		body   string
		want   string
	}{
		{inbound.SchemeSHA256, with("Idempotency-Key", "k1", "Webhook-Id", "msg_1"), body, bodyID},
		{inbound.SchemeSHA256, with("Idempotency-Key", "k2"), body, bodyID},
		{inbound.SchemeGitHub, with("X-GitHub-Delivery", "gh-1"), body, bodyID},
		{inbound.SchemeStandard, with("Webhook-Id", "msg_1", "Idempotency-Key", "k1"), body, "msg_1"},
		{inbound.SchemeStandard, with("Webhook-Id", "msg_1"), "{}", "msg_1"},
	}
	for i, tt := range tests {
		if got := inbound.MessageID(tt.scheme, tt.h, []byte(tt.body)); got != tt.want {
			t.Errorf("%d: MessageID(%s, %v) = %q, want %q", i, tt.scheme, tt.h, got, tt.want)
		}
	}
	odd := inbound.MessageID(inbound.SchemeStandard, with("Webhook-Id", "msg_\xff"), []byte(body))
	if !utf8.ValidString(odd) || odd == inbound.MessageID(inbound.SchemeStandard, with("Webhook-Id", "msg_\xfe"), []byte(body)) {
		t.Errorf("MessageID of a webhook-id that is not UTF-8: %q, want valid text that tells ids apart", odd)
	}
}
