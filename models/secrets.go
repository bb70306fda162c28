package models

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeyPrefixLen is how many leading characters of an API key are stored in
// clear so that people can tell keys apart.
const KeyPrefixLen = 12

// NewAPIKeySecret returns a new API key: "rh_" and 43 characters of
// base64url, 256 bits of randomness.
func NewAPIKeySecret() string {
	return "rh_" + randomToken(32)
}

// HashAPIKey returns the hex SHA-256 of an API key. Keys carry 256 bits of
// randomness, so a fast hash is enough and keeps lookups to one index probe.
func HashAPIKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// KeyPrefix returns the visible prefix of an API key; short keys show at
// most a third of themselves.
func KeyPrefix(secret string) string {
	n := min(KeyPrefixLen, len(secret)/3)
	return secret[:n]
}

// HashesEqual compares two hex digests in constant time.
func HashesEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// SecretBox encrypts stored secrets with AES-256-GCM.
type SecretBox struct {
	aead cipher.AEAD
}

const sealedPrefix = "v1:"

// NewSecretBox returns a SecretBox for a 32-byte key.
func NewSecretBox(key []byte) (*SecretBox, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secret key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	return &SecretBox{aead: aead}, nil
}

// ParseSecretKey decodes a base64 (standard or URL, padded or not) 32-byte key.
func ParseSecretKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("secret key must decode to 32 bytes, got %d", len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("secret key is not valid base64")
}

// Seal encrypts plaintext; additional binds the ciphertext to its owner (a
// tenant id, say) so it cannot be moved to another row.
func (b *SecretBox) Seal(plaintext, additional string) string {
	return b.SealBytes([]byte(plaintext), additional)
}

// SealBytes is Seal of bytes, which it seals without copying them first;
// a keyed write seals its answer with it.
func (b *SecretBox) SealBytes(plaintext []byte, additional string) string {
	ns := b.aead.NonceSize()
	sealed := make([]byte, ns, ns+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(sealed); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	sealed = b.aead.Seal(sealed, sealed[:ns], plaintext, []byte(additional))
	out := make([]byte, len(sealedPrefix)+base64.StdEncoding.EncodedLen(len(sealed)))
	base64.StdEncoding.Encode(out[copy(out, sealedPrefix):], sealed)
	return string(out)
}

// Open decrypts what Seal returned.
func (b *SecretBox) Open(sealed, additional string) (string, error) {
	raw, ok := strings.CutPrefix(sealed, sealedPrefix)
	if !ok {
		return "", errors.New("unknown sealed secret format")
	}
	data, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return "", fmt.Errorf("decode sealed secret: %w", err)
	}
	ns := b.aead.NonceSize()
	if len(data) < ns {
		return "", errors.New("sealed secret too short")
	}
	plain, err := b.aead.Open(nil, data[:ns], data[ns:], []byte(additional))
	if err != nil {
		return "", fmt.Errorf("open sealed secret: %w", err)
	}
	return string(plain), nil
}
