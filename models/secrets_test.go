package models_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// TestSecretBox: what Seal and SealBytes seal opens to the same plaintext
// with the same additional data and with no other; two seals of the same
// plaintext differ (a nonce each).
func TestSecretBox(t *testing.T) {
	box, err := models.NewSecretBox(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range []string{"", "s", strings.Repeat("a longer answer body, ", 50)} {
		a, b := box.Seal(plain, "owner"), box.SealBytes([]byte(plain), "owner")
		if a == b {
			t.Errorf("two seals of %q are the same: %q", plain, a)
		}
		for _, sealed := range []string{a, b} {
			got, err := box.Open(sealed, "owner")
			if err != nil || got != plain {
				t.Errorf("Open(%q) = %q, %v; want %q", sealed, got, err, plain)
			}
			if _, err := box.Open(sealed, "another owner"); err == nil {
				t.Errorf("Open(%q) with another owner succeeded", sealed)
			}
		}
	}
}
