package models

import (
	"context"
	"fmt"
	"strings"
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

// CreateTenant creates a tenant with a first admin key, with a new
// secret, and returns both; the secret is returned once and never stored.
// It refuses a name that a tenant already has (KindConflict, naming that
// tenant's id): the command line takes a tenant's name where it takes its
// id, so a second tenant of the same name would make the name useless
// there.
func (s *Store) CreateTenant(ctx context.Context, name string, rateLimit int) (*Tenant, *APIKey, string, error) {
	if name == "" || len(name) > MaxNameBytes {
		return nil, nil, "", Errorf(KindInvalid, "a tenant name must be 1 to %d bytes, got %d", MaxNameBytes, len(name))
	}
	secret := NewAPIKeySecret()
	now := s.now()
	t := &Tenant{ID: NewID(PrefixTenant), Name: name, CreatedAt: now}
	k := newAdminKey(t.ID, secret, rateLimit, now)
	err := s.write(ctx, func(tx *gormDB) error {
		if err := lockTenants(tx, s.dialect); err != nil {
			return err
		}
		same, err := tenantsNamed(tx, name)
		if err != nil {
			return err
		}
		if len(same) > 0 {
			return Errorf(KindConflict, "a tenant named %q exists already (%s)", name, tenantIDs(same))
		}
		return insertTenant(tx, t, k)
	})
	if err != nil {
		return nil, nil, "", err
	}
	return t, k, secret, nil
}

// ListTenants returns every tenant, oldest first, without its AI key.
func (s *Store) ListTenants(ctx context.Context) ([]Tenant, error) {
	var ts []Tenant
	if err := s.r.WithContext(ctx).Select("id", "name", "created_at").Order("created_at, id").Find(&ts).Error; err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return ts, nil
}

// FindTenant returns the tenant whose id, else whose name, is ref: people
// remember names, scripts hold ids. A name that several tenants share is
// refused (KindConflict, listing their ids); no match is KindNotFound.
func (s *Store) FindTenant(ctx context.Context, ref string) (*Tenant, error) {
	t, err := s.GetTenant(ctx, ref)
	if err == nil || ErrorKind(err) != KindNotFound {
		return t, err
	}
	same, err := tenantsNamed(s.r.WithContext(ctx), ref)
	if err != nil {
		return nil, err
	}
	switch len(same) {
	case 0:
		return nil, Errorf(KindNotFound, "no tenant has the id or name %q", ref)
	case 1:
		return &same[0], nil
	}
	return nil, Errorf(KindConflict, "%d tenants are named %q (%s): give one's id", len(same), ref, tenantIDs(same))
}

// tenantsNamed returns the tenants called name, oldest first, without
// their AI keys.
func tenantsNamed(db *gormDB, name string) ([]Tenant, error) {
	var ts []Tenant
	if err := db.Select("id", "name", "created_at").Where("name = ?", name).Order("created_at, id").Find(&ts).Error; err != nil {
		return nil, fmt.Errorf("load tenants named %q: %w", name, err)
	}
	return ts, nil
}

func tenantIDs(ts []Tenant) string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return strings.Join(ids, ", ")
}

// tenantsLock is the PostgreSQL advisory lock taken by the transactions
// that create tenants.
const tenantsLock = 7401

// lockTenants serialises the transactions that decide whether to create a
// tenant, across processes sharing a PostgreSQL database. SQLite needs
// nothing: it has one writer at a time.
func lockTenants(tx *gormDB, d Dialect) error {
	if d != Postgres {
		return nil
	}
	if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", tenantsLock).Error; err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}

// GetTenant returns a tenant; ErrNotFound when there is none with that id.
func (s *Store) GetTenant(ctx context.Context, id string) (*Tenant, error) {
	var t Tenant
	if err := s.r.WithContext(ctx).Where("id = ?", id).Take(&t).Error; err != nil {
		return nil, notFoundOr(err, "load tenant")
	}
	return &t, nil
}

// SetTenantAIKey stores the tenant's AI provider key, sealed with the
// store's SecretBox under "tenant-ai-key:" and the tenant's id, so that a
// sealed key copied to another tenant's row does not open. Nothing in the
// service reads it back yet: it is kept for the AI features.
func (s *Store) SetTenantAIKey(ctx context.Context, tenantID, key string) error {
	if key == "" {
		return Errorf(KindInvalid, "the AI key must not be empty")
	}
	sealed := s.box.Seal(key, "tenant-ai-key:"+tenantID)
	res := s.writer(ctx).Model(&Tenant{}).Where("id = ?", tenantID).Update("ai_key", sealed)
	if res.Error != nil {
		return fmt.Errorf("store ai key: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// BootstrapTenant creates tenant name with the given admin secret (generated
// when empty) if no tenant exists yet, and reports whether it did. Replicas
// starting together create one tenant between them.
func (s *Store) BootstrapTenant(ctx context.Context, name, adminSecret string, rateLimit int) (created bool, secret string, err error) {
	if adminSecret == "" {
		adminSecret = NewAPIKeySecret()
	}
	err = s.write(ctx, func(tx *gormDB) error {
		if err := lockTenants(tx, s.dialect); err != nil {
			return err
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
