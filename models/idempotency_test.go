package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestIdempotencyKeys: an answer saved in a transaction is what the next
// claim of its key returns, sealed at rest; a key held (in a transaction
// or outside one) refuses other claims at once and is free again once
// released; a younger row is never overwritten, an expired one is
// ignored and replaced; keys are per API key.
func TestIdempotencyKeys(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		db := storetest.NewDB(t, d)
		clock := storetest.NewClock()
		s := db.Open(t, models.Options{Now: clock.Now})
		const ttl = 24 * time.Hour
		const keyID, key = "key_a", "order-1 retry:ok"
		want := models.IdempotentAnswer{
			Fingerprint: []byte("fp-1"), Status: 201,
			Header: map[string]string{"Content-Type": "application/json", "Location": "/x"},
			Body:   []byte(`{"key":"rh_plaintext-secret"}`),
		}

		claim := func(ctx context.Context, keyID, key string) (func(), *models.IdempotentAnswer, error) {
			t.Helper()
			return s.ClaimIdempotencyKey(ctx, keyID, key, ttl)
		}
		err := s.Atomically(ctx, func(ctx context.Context) error {
			release, got, err := claim(ctx, keyID, key)
			if err != nil {
				return err
			}
			defer release()
			if got != nil {
				t.Errorf("first claim found %+v", got)
			}
			return s.SaveIdempotentAnswer(ctx, keyID, key, ttl, want)
		})
		if err != nil {
			t.Fatal(err)
		}
		release, got, err := claim(ctx, keyID, key)
		if err != nil {
			t.Fatal(err)
		}
		release()
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("stored answer (-want +got):\n%s", diff)
		}
		if !got.Same([]byte("fp-1")) || got.Same([]byte("fp-2")) {
			t.Error("Same does not tell the fingerprints apart")
		}
		rows := db.Rows(t, "SELECT body FROM idempotency_keys")
		if len(rows) != 1 || strings.Contains(rows[0]["body"], "plaintext") {
			t.Errorf("stored bodies %v: want one, sealed", rows)
		}

		// Another API key's same idempotency key is another row.
		release, got, err = claim(ctx, "key_b", key)
		if err != nil || got != nil {
			t.Fatalf("other API key's claim: %v, %v; want nothing stored", got, err)
		}
		release()

		// Held outside a transaction: every other claim is refused at
		// once, in a transaction or not, until released.
		release, _, err = claim(ctx, keyID, "held")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := claim(ctx, keyID, "held"); !errors.Is(err, models.ErrIdempotencyKeyBusy) {
			t.Errorf("second claim outside a transaction: %v, want busy", err)
		}
		err = s.Atomically(ctx, func(ctx context.Context) error {
			_, _, err := claim(ctx, keyID, "held")
			return err
		})
		if !errors.Is(err, models.ErrIdempotencyKeyBusy) {
			t.Errorf("claim in a transaction of a held key: %v, want busy", err)
		}
		release()
		release, _, err = claim(ctx, keyID, "held")
		if err != nil {
			t.Fatalf("claim after release: %v", err)
		}
		release()

		// A fresh row is never replaced: the save of a request that raced
		// the one that stored it is refused.
		other := want
		other.Fingerprint = []byte("fp-2")
		if err := s.SaveIdempotentAnswer(ctx, keyID, key, ttl, other); !errors.Is(err, models.ErrIdempotencyKeyBusy) {
			t.Errorf("save over a fresh row: %v, want busy", err)
		}

		// Past the TTL the row counts as absent, and a save replaces it.
		clock.Advance(ttl + time.Second)
		release, got, err = claim(ctx, keyID, key)
		if err != nil || got != nil {
			t.Fatalf("claim of an expired key: %+v, %v; want nothing", got, err)
		}
		release()
		if err := s.SaveIdempotentAnswer(ctx, keyID, key, ttl, other); err != nil {
			t.Fatalf("save over an expired row: %v", err)
		}
		release, got, err = claim(ctx, keyID, key)
		if err != nil {
			t.Fatal(err)
		}
		release()
		if got == nil || !got.Same([]byte("fp-2")) {
			t.Errorf("after replacing the expired row: %+v, want fp-2's answer", got)
		}

		// Purged once older than the cutoff.
		n, err := s.Purge(ctx, models.PurgeIdempotencyKeys, clock.Now().Add(time.Second), 100)
		if err != nil || n != 1 {
			t.Errorf("purge: %d, %v; want 1 row", n, err)
		}
		if rows := db.Rows(t, "SELECT key_id FROM idempotency_keys"); len(rows) != 0 {
			t.Errorf("rows after the purge: %v", rows)
		}
	})
}
