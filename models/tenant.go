package models

import (
	"context"
	"fmt"
	"time"
)

// Tenant owns modules, records and keys. Its AI provider key is stored
// sealed and never leaves the store through the API.
type Tenant struct {
	ID        string `gorm:"primaryKey"`
	Name      string
	AIKey     *string `gorm:"column:ai_key"`
	CreatedAt time.Time
}

// CreateTenant creates a tenant with a first admin key and returns both;
// when adminSecret is empty a new key secret is generated. The secret is
// returned once and never stored.
func (s *Store) CreateTenant(ctx context.Context, name, adminSecret string, rateLimit int) (*Tenant, *APIKey, string, error) {
	if name == "" {
		return nil, nil, "", Errorf(KindInvalid, "tenant name must not be empty")
	}
	if adminSecret == "" {
		adminSecret = NewAPIKeySecret()
	}
	now := s.now()
	t := &Tenant{ID: NewID(PrefixTenant), Name: name, CreatedAt: now}
	k := newAdminKey(t.ID, adminSecret, rateLimit, now)
	if err := s.write(ctx, func(tx *gormDB) error { return insertTenant(tx, t, k) }); err != nil {
		return nil, nil, "", err
	}
	return t, k, adminSecret, nil
}

// GetTenant returns a tenant; ErrNotFound when there is none with that id.
func (s *Store) GetTenant(ctx context.Context, id string) (*Tenant, error) {
	var t Tenant
	if err := s.r.WithContext(ctx).Where("id = ?", id).Take(&t).Error; err != nil {
		return nil, notFoundOr(err, "load tenant")
	}
	return &t, nil
}

// SetTenantAIKey stores the tenant's AI provider key, encrypted.
func (s *Store) SetTenantAIKey(ctx context.Context, tenantID, key string) error {
	if key == "" {
		return Errorf(KindInvalid, "the AI key must not be empty")
	}
	sealed := s.box.Seal(key, "tenant-ai-key:"+tenantID)
	res := s.w.WithContext(ctx).Model(&Tenant{}).Where("id = ?", tenantID).Update("ai_key", sealed)
	if res.Error != nil {
		return fmt.Errorf("store ai key: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// TenantAIKey returns the tenant's decrypted AI provider key, or "" when none
// is set. It exists for the AI features; no API handler calls it.
func (s *Store) TenantAIKey(ctx context.Context, tenantID string) (string, error) {
	var t Tenant
	if err := s.r.WithContext(ctx).Where("id = ?", tenantID).Take(&t).Error; err != nil {
		return "", notFoundOr(err, "load tenant")
	}
	if t.AIKey == nil {
		return "", nil
	}
	return s.box.Open(*t.AIKey, "tenant-ai-key:"+tenantID)
}

// BootstrapTenant creates tenant name with the given admin secret (generated
// when empty) if no tenant exists yet, and reports whether it did. Replicas
// starting together create one tenant between them.
func (s *Store) BootstrapTenant(ctx context.Context, name, adminSecret string, rateLimit int) (created bool, secret string, err error) {
	if adminSecret == "" {
		adminSecret = NewAPIKeySecret()
	}
	err = s.write(ctx, func(tx *gormDB) error {
		if s.dialect == Postgres {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(7401)").Error; err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		var n int64
		if err := tx.Model(&Tenant{}).Count(&n).Error; err != nil {
			return fmt.Errorf("count tenants: %w", err)
		}
		if n > 0 {
			return nil
		}
		now := s.now()
		t := &Tenant{ID: NewID(PrefixTenant), Name: name, CreatedAt: now}
		if err := insertTenant(tx, t, newAdminKey(t.ID, adminSecret, rateLimit, now)); err != nil {
			return err
		}
		created = true
		return nil
	})
	if err != nil {
		return false, "", err
	}
	return created, adminSecret, nil
}

// insertTenant writes a tenant and its first admin key in tx.
func insertTenant(tx *gormDB, t *Tenant, k *APIKey) error {
	if err := tx.Create(t).Error; err != nil {
		return fmt.Errorf("insert tenant: %w", err)
	}
	if err := tx.Create(k).Error; err != nil {
		if isUniqueViolation(err) {
			return Errorf(KindConflict, "that admin key is already in use")
		}
		return fmt.Errorf("insert admin key: %w", err)
	}
	return nil
}

func newAdminKey(tenantID, secret string, rateLimit int, now time.Time) *APIKey {
	return &APIKey{
		ID: NewID(PrefixKey), TenantID: tenantID, Name: "admin", Admin: true,
		Prefix: KeyPrefix(secret), Hash: HashAPIKey(secret),
		Permissions: Permissions{}, RateLimitPerMinute: rateLimit,
		CreatedAt: now, UpdatedAt: now,
	}
}
