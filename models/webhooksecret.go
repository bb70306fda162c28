package models

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// Endpoint signing secrets take the Standard Webhooks form: "whsec_" and
// the standard, padded base64 of the key bytes, which is what the receivers'
// libraries (standardwebhooks, svix) decode and key webhook-signature with.
const (
	webhookKeyBytes    = 32
	minWebhookKeyBytes = 24
	maxWebhookKeyBytes = 64
)

// WebhookSecretRule says what a secret given on create must be, and how to
// make one.
const WebhookSecretRule = `must be "whsec_" followed by the standard base64 (padded) of 24 to 64 random bytes; ` +
	`make one with: "whsec_" + $(openssl rand -base64 32)`

// NewWebhookSecret returns a new signing secret: "whsec_" and the standard
// base64 of 32 random bytes, 50 characters.
func NewWebhookSecret() string {
	b := make([]byte, webhookKeyBytes)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return PrefixWebhookSecret + base64.StdEncoding.EncodeToString(b)
}

// StandardWebhooksKey returns the HMAC key of the webhook-signature header
// for secret, the same on both sides: outbound signing and the inbound
// standard_webhooks scheme.
//
// A secret in the Standard Webhooks form is keyed with its decoded bytes.
// Any other secret is keyed with its UTF-8 bytes, as every secret was
// before that form was adopted: the secrets generated then ("whsec_" and 43
// characters of unpadded base64url) never decode as padded standard base64,
// so endpoints made before keep byte-identical signatures and their
// receivers keep verifying.
func StandardWebhooksKey(secret string) []byte {
	if key, ok := decodeWebhookSecret(secret); ok {
		return key
	}
	return []byte(secret)
}

// decodeWebhookSecret returns the key of a secret in the Standard Webhooks
// form. The decoded key must encode back to exactly what was given: the
// decoder alone would skip line breaks and take non-canonical final bits.
func decodeWebhookSecret(secret string) ([]byte, bool) {
	rest, ok := strings.CutPrefix(secret, PrefixWebhookSecret)
	if !ok {
		return nil, false
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) < minWebhookKeyBytes || len(key) > maxWebhookKeyBytes ||
		base64.StdEncoding.EncodeToString(key) != rest {
		return nil, false
	}
	return key, true
}
