package models_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// tenants numbers newTenant's tenants: a tenant's name is unique in its
// store.
var tenants atomic.Int64

// wantAuth checks what Authenticate says about secret: the error kind (""
// for success) and, when wantKeyID is set, the key it names.
func wantAuth(t *testing.T, s *models.Store, secret string, wantKind models.Kind, wantKeyID string) {
	t.Helper()
	k, err := s.Authenticate(context.Background(), secret)
	if got := kindOf(err); got != wantKind {
		t.Fatalf("Authenticate: error kind %q (%v), want %q", got, err, wantKind)
	}
	gotID := ""
	if k != nil {
		gotID = k.ID
	}
	if gotID != wantKeyID {
		t.Fatalf("Authenticate: key %q, want %q", gotID, wantKeyID)
	}
}

func TestAuthenticateLifecycle(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s := storetest.OpenWithClock(t, d, clock.Now)
		tenant, _ := newTenant(t, s)

		expiring, expiringSecret := createKey(t, s, tenant, models.KeyInput{ExpiresAt: ptr(clock.Now().Add(time.Hour))})
		revoked, revokedSecret := createKey(t, s, tenant, models.KeyInput{})
		rotated, oldSecret := createKey(t, s, tenant, models.KeyInput{})
		graced, gracedOld := createKey(t, s, tenant, models.KeyInput{})

		// Every key works, and is now in the cache.
		wantAuth(t, s, expiringSecret, "", expiring.ID)
		wantAuth(t, s, revokedSecret, "", revoked.ID)
		wantAuth(t, s, oldSecret, "", rotated.ID)
		wantAuth(t, s, gracedOld, "", graced.ID)

		if _, err := s.RevokeKey(ctx, tenant, revoked.ID); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		_, newSecret, err := s.RotateKey(ctx, tenant, rotated.ID, 0)
		if err != nil {
			t.Fatalf("rotate: %v", err)
		}
		_, gracedNew, err := s.RotateKey(ctx, tenant, graced.ID, 60)
		if err != nil {
			t.Fatalf("rotate with grace: %v", err)
		}

		wantAuth(t, s, "", models.KindUnauthorized, "")
		wantAuth(t, s, "rh_unknown", models.KindUnauthorized, "")
		wantAuth(t, s, revokedSecret, models.KindUnauthorized, revoked.ID)
		wantAuth(t, s, oldSecret, models.KindUnauthorized, "")
		wantAuth(t, s, newSecret, "", rotated.ID)
		wantAuth(t, s, gracedOld, "", graced.ID)
		wantAuth(t, s, gracedNew, "", graced.ID)

		clock.Advance(59 * time.Second)
		wantAuth(t, s, gracedOld, "", graced.ID)

		// Revoking a key during its grace period ends both secrets.
		revokedInGrace, inGraceOld := createKey(t, s, tenant, models.KeyInput{})
		_, inGraceNew, err := s.RotateKey(ctx, tenant, revokedInGrace.ID, 3600)
		if err != nil {
			t.Fatal(err)
		}
		wantAuth(t, s, inGraceOld, "", revokedInGrace.ID)
		if _, err := s.RevokeKey(ctx, tenant, revokedInGrace.ID); err != nil {
			t.Fatal(err)
		}
		wantAuth(t, s, inGraceOld, models.KindUnauthorized, "")
		wantAuth(t, s, inGraceNew, models.KindUnauthorized, revokedInGrace.ID)

		clock.Advance(time.Second)
		wantAuth(t, s, gracedOld, models.KindUnauthorized, graced.ID)
		wantAuth(t, s, gracedNew, "", graced.ID)
		wantAuth(t, s, expiringSecret, "", expiring.ID)

		clock.Advance(time.Hour)
		wantAuth(t, s, expiringSecret, models.KindKeyExpired, expiring.ID)

		// Clearing the expiry brings the key back.
		if _, err := s.UpdateKey(ctx, tenant, expiring.ID, models.KeyInput{ClearExpiry: true}); err != nil {
			t.Fatalf("clear expiry: %v", err)
		}
		wantAuth(t, s, expiringSecret, "", expiring.ID)
	})
}

func TestKeyStoredAsHashOnly(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		db := storetest.NewDB(t, d)
		s := db.Open(t, models.Options{})
		tenant, adminSecret := newTenant(t, s)
		k, secret := createKey(t, s, tenant, models.KeyInput{Name: ptr("ci")})
		rotated, rotatedSecret, err := s.RotateKey(ctx, tenant, k.ID, 60)
		if err != nil {
			t.Fatalf("rotate: %v", err)
		}
		if !strings.HasPrefix(secret, k.Prefix) || !strings.HasPrefix(rotatedSecret, rotated.Prefix) {
			t.Errorf("prefixes %q, %q do not start the secrets", k.Prefix, rotated.Prefix)
		}
		if got, want := rotated.Hash, models.HashAPIKey(rotatedSecret); got != want {
			t.Errorf("hash %q, want %q", got, want)
		}

		// Nothing the database holds reveals a secret beyond its prefix.
		for _, s := range []string{secret, rotatedSecret, adminSecret} {
			hidden := s[models.KeyPrefixLen:]
			for _, row := range db.Rows(t, "SELECT * FROM api_keys") {
				for col, v := range row {
					if strings.Contains(v, hidden) {
						t.Errorf("column %s holds a secret: %q", col, v)
					}
				}
			}
		}
	})
}

func TestKeyValidation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.NewDB(t, d).Open(t, models.Options{})
		tenant, _ := newTenant(t, s)
		other, _ := newTenant(t, s)
		mine, err := s.CreateModule(ctx, tenant, models.ModuleInput{Slug: ptr("mine"), Name: ptr("Mine")})
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := s.CreateModule(ctx, other, models.ModuleInput{Slug: ptr("theirs"), Name: ptr("Theirs")})
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			in   models.KeyInput
			want []string // fields with errors
		}{
			{"unknown action", models.KeyInput{Permissions: models.Permissions{mine.ID: {"read", "admin"}}}, []string{"permissions." + mine.ID}},
			{"unknown module", models.KeyInput{Permissions: models.Permissions{"mod_nope": {"read"}}}, []string{"permissions.mod_nope"}},
			{"another tenant's module", models.KeyInput{Permissions: models.Permissions{theirs.ID: {"read"}}}, []string{"permissions." + theirs.ID}},
			{"limit 0", models.KeyInput{RateLimitPerMinute: ptr(0)}, []string{"rate_limit_per_minute"}},
			{"limit too high", models.KeyInput{RateLimitPerMinute: ptr(models.MaxRateLimitPerMinute + 1)}, []string{"rate_limit_per_minute"}},
			{"past expiry", models.KeyInput{ExpiresAt: ptr(time.Now().Add(-time.Minute))}, []string{"expires_at"}},
			{"name too long", models.KeyInput{Name: ptr(strings.Repeat("n", 201))}, []string{"name"}},
			{"several", models.KeyInput{RateLimitPerMinute: ptr(-1), ExpiresAt: ptr(time.Now().Add(-time.Minute))}, []string{"expires_at", "rate_limit_per_minute"}},
		}
		existing, _ := createKey(t, s, tenant, models.KeyInput{})
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, _, err := s.CreateKey(ctx, tenant, tt.in, 600)
				if diff := cmp.Diff(tt.want, errorFields(t, err)); diff != "" {
					t.Errorf("CreateKey error fields (-want +got):\n%s", diff)
				}
				_, err = s.UpdateKey(ctx, tenant, existing.ID, tt.in)
				if diff := cmp.Diff(tt.want, errorFields(t, err)); diff != "" {
					t.Errorf("UpdateKey error fields (-want +got):\n%s", diff)
				}
			})
		}
		if _, _, err := s.RotateKey(ctx, tenant, existing.ID, -1); kindOf(err) != models.KindValidation {
			t.Errorf("rotate with grace -1: %v, want a validation error", err)
		}
		if _, _, err := s.RotateKey(ctx, tenant, existing.ID, models.MaxGraceSeconds+1); kindOf(err) != models.KindValidation {
			t.Errorf("rotate with grace above the maximum: %v, want a validation error", err)
		}
	})
}

func TestKeyChanges(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s := storetest.OpenWithClock(t, d, clock.Now)
		tenant, _ := newTenant(t, s)
		mod, err := s.CreateModule(ctx, tenant, models.ModuleInput{Slug: ptr("m"), Name: ptr("M")})
		if err != nil {
			t.Fatal(err)
		}
		k, _ := createKey(t, s, tenant, models.KeyInput{
			Name: ptr("before"), RateLimitPerMinute: ptr(10), ExpiresAt: ptr(clock.Now().Add(time.Hour)),
			Permissions: models.Permissions{mod.ID: {"delete", "read", "read"}},
		})
		if diff := cmp.Diff(models.Permissions{mod.ID: {"read", "delete"}}, k.Permissions); diff != "" {
			t.Errorf("created permissions not canonical (-want +got):\n%s", diff)
		}

		// An empty change changes nothing, the expiry included.
		got, err := s.UpdateKey(ctx, tenant, k.ID, models.KeyInput{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ExpiresAt == nil || got.Name != "before" || got.RateLimitPerMinute != 10 {
			t.Errorf("empty update changed the key: %+v", got)
		}

		got, err = s.UpdateKey(ctx, tenant, k.ID, models.KeyInput{
			Name: ptr("after"), RateLimitPerMinute: ptr(20), ClearExpiry: true,
			Permissions: models.Permissions{models.AllModules: {"read"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "after" || got.RateLimitPerMinute != 20 || got.ExpiresAt != nil {
			t.Errorf("update: name %q, limit %d, expires %v; want after, 20, nil", got.Name, got.RateLimitPerMinute, got.ExpiresAt)
		}
		if diff := cmp.Diff(models.Permissions{models.AllModules: {"read"}}, got.Permissions); diff != "" {
			t.Errorf("updated permissions (-want +got):\n%s", diff)
		}
		reread, err := s.GetKey(ctx, tenant, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, reread); diff != "" {
			t.Errorf("GetKey differs from what UpdateKey returned (-update +get):\n%s", diff)
		}

		first, err := s.RevokeKey(ctx, tenant, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		second, err := s.RevokeKey(ctx, tenant, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if first.RevokedAt == nil || second.RevokedAt == nil || !first.RevokedAt.Equal(*second.RevokedAt) {
			t.Errorf("revoked_at %v after a second revocation, want %v", second.RevokedAt, first.RevokedAt)
		}
		if _, _, err := s.RotateKey(ctx, tenant, k.ID, 0); kindOf(err) != models.KindConflict {
			t.Errorf("rotating a revoked key: %v, want a conflict", err)
		}
	})
}

func TestKeysOfAnotherTenantAreNotFound(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.NewDB(t, d).Open(t, models.Options{})
		mine, _ := newTenant(t, s)
		other, _ := newTenant(t, s)
		theirs, theirSecret := createKey(t, s, other, models.KeyInput{})

		ops := map[string]func() error{
			"get":    func() error { _, err := s.GetKey(ctx, mine, theirs.ID); return err },
			"update": func() error { _, err := s.UpdateKey(ctx, mine, theirs.ID, models.KeyInput{Name: ptr("x")}); return err },
			"revoke": func() error { _, err := s.RevokeKey(ctx, mine, theirs.ID); return err },
			"rotate": func() error { _, _, err := s.RotateKey(ctx, mine, theirs.ID, 0); return err },
		}
		for name, op := range ops {
			if got := kindOf(op()); got != models.KindNotFound {
				t.Errorf("%s: error kind %q, want %q", name, got, models.KindNotFound)
			}
		}
		keys, total, err := s.ListKeys(ctx, mine, models.Page{Page: 1, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if k.TenantID != mine {
				t.Errorf("ListKeys returned key %s of tenant %s", k.ID, k.TenantID)
			}
		}
		if total != 1 {
			t.Errorf("ListKeys total %d, want 1 (the admin key)", total)
		}
		// The other tenant's key is untouched.
		wantAuth(t, s, theirSecret, "", theirs.ID)
	})
}

// TestRevocationReachesOtherStores opens two stores on one database, as two
// replicas would, and checks that a key B has cached stops working on B
// within one second of A revoking it.
func TestRevocationReachesOtherStores(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		db := storetest.NewDB(t, d)
		a := db.Open(t, models.Options{})
		b := db.Open(t, models.Options{})
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		go a.WatchChanges(ctx, log)
		go b.WatchChanges(ctx, log)

		tenant, _ := newTenant(t, a)
		k, secret := createKey(t, a, tenant, models.KeyInput{})
		rotated, rotateMe := createKey(t, a, tenant, models.KeyInput{})
		wantAuth(t, b, secret, "", k.ID)
		wantAuth(t, b, rotateMe, "", rotated.ID)

		if _, err := a.RevokeKey(ctx, tenant, k.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.RotateKey(ctx, tenant, rotated.ID, 0); err != nil {
			t.Fatal(err)
		}
		wantAuth(t, a, secret, models.KindUnauthorized, k.ID)
		wantAuth(t, a, rotateMe, models.KindUnauthorized, "")
		for _, secret := range []string{secret, rotateMe} {
			storetest.Eventually(t, time.Second, "B to refuse the changed key", func() bool {
				_, err := b.Authenticate(ctx, secret)
				return kindOf(err) == models.KindUnauthorized
			})
		}
	})
}

func TestAccessLogUsage(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		db := storetest.NewDB(t, d)
		s := db.Open(t, models.Options{})
		tenant, _ := newTenant(t, s)
		k, _ := createKey(t, s, tenant, models.KeyInput{})

		day := time.Date(2030, 3, 4, 0, 0, 0, 0, time.UTC)
		at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
		row := func(when time.Time, status int, keyed bool) models.AccessLog {
			l := models.AccessLog{ID: models.NewID(models.PrefixAccessLog), Method: "GET", Path: "/api/modules", Route: "/api/modules", Status: status, RequestID: "r", CreatedAt: when}
			if keyed {
				l.TenantID, l.KeyID = &tenant, &k.ID
			}
			return l
		}
		batches := [][]models.AccessLog{
			{row(at(1, 0), 200, true), row(at(1, 5), 404, true), row(at(1, 10), 429, true), row(at(1, 15), 200, false)},
			{row(at(1, 59), 500, true), row(at(2, 0), 200, true), row(at(2, 30), 401, true), row(day.Add(25*time.Hour), 201, true)},
		}
		// The second batch again, as the access-log writer tries a batch
		// whose COMMIT answered an error, plus a new row: counted once.
		again := append(slices.Clone(batches[1]), row(at(2, 45), 200, true))
		for _, b := range append(batches, again) {
			if err := s.InsertAccessLogs(ctx, b); err != nil {
				t.Fatalf("insert access logs: %v", err)
			}
		}

		hours, err := s.KeyUsageBuckets(ctx, tenant, k.ID, false, day, day.Add(48*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		wantHours := []models.UsageBucket{
			{BucketStart: at(1, 0), Requests: 4, Errors: 2, RateLimited: 1},
			{BucketStart: at(2, 0), Requests: 3, Errors: 1},
			{BucketStart: day.Add(25 * time.Hour), Requests: 1},
		}
		if diff := cmp.Diff(wantHours, utcBuckets(hours)); diff != "" {
			t.Errorf("hourly usage (-want +got):\n%s", diff)
		}
		days, err := s.KeyUsageBuckets(ctx, tenant, k.ID, true, day, day.Add(48*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		wantDays := []models.UsageBucket{
			{BucketStart: day, Requests: 7, Errors: 3, RateLimited: 1},
			{BucketStart: day.Add(24 * time.Hour), Requests: 1},
		}
		if diff := cmp.Diff(wantDays, utcBuckets(days)); diff != "" {
			t.Errorf("daily usage (-want +got):\n%s", diff)
		}

		// last_used_at follows the newest call that was not refused at the door.
		got, err := s.GetKey(ctx, tenant, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := day.Add(25 * time.Hour); got.LastUsedAt == nil || !got.LastUsedAt.Equal(want) {
			t.Errorf("last_used_at %v, want %v", got.LastUsedAt, want)
		}

		// The unattributed row is stored with a null tenant and key, and is no tenant's.
		var n int
		if err := db.SQL(t).QueryRow("SELECT COUNT(*) FROM access_logs WHERE tenant_id IS NULL AND key_id IS NULL").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%d rows without tenant, want 1", n)
		}
		_, total, err := s.ListAccessLogs(ctx, tenant, models.AccessLogQuery{Page: models.Page{Page: 1, Limit: 100}})
		if err != nil {
			t.Fatal(err)
		}
		if total != 8 {
			t.Errorf("tenant sees %d access-log rows, want 8", total)
		}
	})
}
