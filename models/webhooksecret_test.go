package models_test

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
)

func TestNewWebhookSecret(t *testing.T) {
	form := regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`)
	seen := map[string]bool{}
	for range 100 {
		s := models.NewWebhookSecret()
		if !form.MatchString(s) {
			t.Fatalf("NewWebhookSecret() = %q, want whsec_ and the padded standard base64 of 32 bytes", s)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || !bytes.Equal(models.StandardWebhooksKey(s), key) {
			t.Fatalf("StandardWebhooksKey(%q) = %x, want the decoded %x (%v)", s, models.StandardWebhooksKey(s), key, err)
		}
		if seen[s] {
			t.Fatalf("NewWebhookSecret() repeated %q", s)
		}
		seen[s] = true
	}
}

// StandardWebhooksKey decodes exactly the secrets in the libraries' form and
// keys every other secret with its UTF-8 bytes, as all were keyed before.
func TestStandardWebhooksKey(t *testing.T) {
	b := func(n int) []byte { return bytes.Repeat([]byte{0xfb}, n) }
	std := func(key []byte) string { return "whsec_" + base64.StdEncoding.EncodeToString(key) }
	tests := []struct {
		name    string
		secret  string
		decoded []byte // nil: the secret's own bytes
	}{
		{"32 bytes", std(b(32)), b(32)},
		{"24 bytes, the least", std(b(24)), b(24)},
		{"64 bytes, the most", std(b(64)), b(64)},
		{"23 bytes", std(b(23)), nil},
		{"65 bytes", std(b(65)), nil},
		{"generated before: unpadded base64url", "whsec_" + base64.RawURLEncoding.EncodeToString(b(32)), nil},
		{"unpadded standard base64", "whsec_" + base64.RawStdEncoding.EncodeToString(b(32)), nil},
		{"padded base64url", "whsec_" + base64.URLEncoding.EncodeToString(b(32)), nil},
		{"no prefix", base64.StdEncoding.EncodeToString(b(32)), nil},
		{"line break inside", std(b(32))[:20] + "\n" + std(b(32))[20:], nil},
		{"trailing line break", std(b(32)) + "\n", nil},
		{"non-canonical last bits", nonCanonical(std(b(32))), nil},
		{"chosen by an admin before", "my-own-signing-secret-0123", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.decoded
			if want == nil {
				want = []byte(tt.secret)
			}
			if got := models.StandardWebhooksKey(tt.secret); !bytes.Equal(got, want) {
				t.Errorf("StandardWebhooksKey(%q) = %x, want %x", tt.secret, got, want)
			}
		})
	}
}

// nonCanonical returns s, padded base64 of a length that leaves unused bits
// in its last character, with those bits set: it decodes to the same bytes.
func nonCanonical(s string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	i := len(strings.TrimRight(s, "=")) - 1
	return s[:i] + string(alphabet[strings.IndexByte(alphabet, s[i])+1]) + s[i+1:]
}
