package models

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
)

// Actions a key may be granted on a module.
const (
	ActionRead   = "read"
	ActionWrite  = "write"
	ActionDelete = "delete"
)

// AllModules is the permissions entry that applies to every module.
const AllModules = "*"

var actions = []string{ActionRead, ActionWrite, ActionDelete}

// APIKey is a tenant's bearer credential. Only a hash of its secret is
// stored; during a rotation's grace period the previous hash also matches.
type APIKey struct {
	ID                 string `gorm:"primaryKey"`
	TenantID           string
	Name               string
	Prefix             string
	Hash               string
	PreviousHash       *string
	PreviousExpiresAt  *time.Time
	Admin              bool
	Permissions        Permissions `gorm:"type:text"`
	RateLimitPerMinute int
	ExpiresAt          *time.Time
	CreatedAt          time.Time
	UpdatedAt          time.Time
	LastUsedAt         *time.Time
	RevokedAt          *time.Time
}

// Actions returns the actions the key may take on a module, in the order
// read, write, delete.
func (k *APIKey) Actions(moduleID string) []string {
	if k.Admin {
		return actions
	}
	var out []string
	for _, a := range actions {
		if slices.Contains(k.Permissions[moduleID], a) || slices.Contains(k.Permissions[AllModules], a) {
			out = append(out, a)
		}
	}
	return out
}

// Can reports whether the key may take action on the module.
func (k *APIKey) Can(moduleID, action string) bool {
	return k.Admin || slices.Contains(k.Permissions[moduleID], action) || slices.Contains(k.Permissions[AllModules], action)
}

// KeyInput holds the settable attributes of a key; nil members are left
// unchanged on update (ClearExpiry removes the expiry).
type KeyInput struct {
	Name               *string
	Admin              *bool
	Permissions        Permissions
	RateLimitPerMinute *int
	ExpiresAt          *time.Time
	ClearExpiry        bool
}

// Bounds of key settings.
const (
	MaxRateLimitPerMinute = 1_000_000
	MaxGraceSeconds       = 7 * 24 * 3600
)

// DefaultRateLimitPerMinute is the limit of keys created without one,
// unless RECORDHUB_DEFAULT_RATE_LIMIT says otherwise.
const DefaultRateLimitPerMinute = 600

func (s *Store) validateKeyInput(ctx context.Context, tenantID string, in KeyInput) ([]FieldError, error) {
	var errs []FieldError
	if in.Name != nil && len(*in.Name) > MaxNameBytes {
		errs = append(errs, FieldError{Field: "name", Message: tooLong(MaxNameBytes, len(*in.Name))})
	}
	if in.RateLimitPerMinute != nil && (*in.RateLimitPerMinute < 1 || *in.RateLimitPerMinute > MaxRateLimitPerMinute) {
		errs = append(errs, FieldError{Field: "rate_limit_per_minute", Message: fmt.Sprintf("must be between 1 and %d", MaxRateLimitPerMinute)})
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.now()) {
		errs = append(errs, FieldError{Field: "expires_at", Message: "must be in the future"})
	}
	var moduleIDs []string
	for mod, acts := range in.Permissions {
		for _, a := range acts {
			if !slices.Contains(actions, a) {
				errs = append(errs, FieldError{Field: "permissions." + mod, Message: fmt.Sprintf("unknown action %q; use read, write or delete", a)})
			}
		}
		if mod != AllModules {
			moduleIDs = append(moduleIDs, mod)
		}
	}
	if len(moduleIDs) > 0 {
		var found []string
		if err := s.r.WithContext(ctx).Model(&Module{}).Where("tenant_id = ? AND id IN ?", tenantID, moduleIDs).Pluck("id", &found).Error; err != nil {
			return nil, fmt.Errorf("check permission modules: %w", err)
		}
		for _, id := range moduleIDs {
			if !slices.Contains(found, id) {
				errs = append(errs, FieldError{Field: "permissions." + id, Message: "no such module"})
			}
		}
	}
	slices.SortFunc(errs, func(a, b FieldError) int {
		if a.Field < b.Field {
			return -1
		}
		if a.Field > b.Field {
			return 1
		}
		return 0
	})
	return errs, nil
}

// canonicalPermissions orders and dedupes each action list.
func canonicalPermissions(p Permissions) Permissions {
	out := make(Permissions, len(p))
	for mod, acts := range p {
		l := []string{}
		for _, a := range actions {
			if slices.Contains(acts, a) {
				l = append(l, a)
			}
		}
		out[mod] = l
	}
	return out
}

// CreateKey creates a key and returns it with its secret, shown only now.
func (s *Store) CreateKey(ctx context.Context, tenantID string, in KeyInput, defaultRateLimit int) (*APIKey, string, error) {
	errs, err := s.validateKeyInput(ctx, tenantID, in)
	if err != nil {
		return nil, "", err
	}
	if len(errs) > 0 {
		return nil, "", ValidationError(errs)
	}
	secret := NewAPIKeySecret()
	now := s.now()
	k := &APIKey{
		ID: NewID(PrefixKey), TenantID: tenantID, Prefix: KeyPrefix(secret), Hash: HashAPIKey(secret),
		Permissions: canonicalPermissions(in.Permissions), RateLimitPerMinute: defaultRateLimit,
		ExpiresAt: in.ExpiresAt, CreatedAt: now, UpdatedAt: now,
	}
	if in.Name != nil {
		k.Name = *in.Name
	}
	if in.Admin != nil {
		k.Admin = *in.Admin
	}
	if in.RateLimitPerMinute != nil {
		k.RateLimitPerMinute = *in.RateLimitPerMinute
	}
	if err := s.writer(ctx).Create(k).Error; err != nil {
		return nil, "", fmt.Errorf("insert key: %w", err)
	}
	return k, secret, nil
}

// GetKey returns one of the tenant's keys.
func (s *Store) GetKey(ctx context.Context, tenantID, id string) (*APIKey, error) {
	var k APIKey
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenantID, id).Take(&k).Error; err != nil {
		return nil, notFoundOr(err, "load key")
	}
	return &k, nil
}

// ListKeys returns a page of the tenant's keys, newest first, and their total.
func (s *Store) ListKeys(ctx context.Context, tenantID string, p Page) ([]APIKey, int64, error) {
	var (
		keys  []APIKey
		total int64
	)
	q := s.r.WithContext(ctx).Model(&APIKey{}).Where("tenant_id = ?", tenantID)
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count keys: %w", err)
	}
	if err := q.Order("created_at DESC, id DESC").Limit(p.Limit).Offset(p.Offset()).Find(&keys).Error; err != nil {
		return nil, 0, fmt.Errorf("list keys: %w", err)
	}
	return keys, total, nil
}

// UpdateKey changes a key's name, admin flag, permissions, limit or expiry.
func (s *Store) UpdateKey(ctx context.Context, tenantID, id string, in KeyInput) (*APIKey, error) {
	errs, err := s.validateKeyInput(ctx, tenantID, in)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, ValidationError(errs)
	}
	return s.changeKey(ctx, tenantID, id, func(tx *gorm.DB, k *APIKey) (map[string]any, error) {
		u := map[string]any{}
		if in.Name != nil {
			u["name"] = *in.Name
		}
		if in.Admin != nil {
			u["admin"] = *in.Admin
			if k.Admin && !*in.Admin {
				if err := s.keepAnAdmin(ctx, tx, k, "demoted"); err != nil {
					return nil, err
				}
			}
		}
		if in.Permissions != nil {
			u["permissions"] = canonicalPermissions(in.Permissions)
		}
		if in.RateLimitPerMinute != nil {
			u["rate_limit_per_minute"] = *in.RateLimitPerMinute
		}
		if in.ExpiresAt != nil {
			u["expires_at"] = *in.ExpiresAt
		} else if in.ClearExpiry {
			u["expires_at"] = nil
		}
		return u, nil
	})
}

// RevokeKey revokes a key at once; revoking twice keeps the first time.
func (s *Store) RevokeKey(ctx context.Context, tenantID, id string) (*APIKey, error) {
	return s.changeKey(ctx, tenantID, id, func(tx *gorm.DB, k *APIKey) (map[string]any, error) {
		if k.RevokedAt != nil {
			return map[string]any{}, nil
		}
		if k.Admin {
			if err := s.keepAnAdmin(ctx, tx, k, "revoked"); err != nil {
				return nil, err
			}
		}
		return map[string]any{"revoked_at": s.now(), "previous_hash": nil, "previous_expires_at": nil}, nil
	})
}

// keepAnAdmin refuses to take away k's admin rights (by revoking or demoting
// it, as verb says) when no other live admin key of its tenant is left: a
// tenant without one could never manage its keys again through the API.
// On PostgreSQL the tenant's row is locked first, so that two requests
// removing two different admin keys cannot each count the other as left.
// (SQLite runs one write transaction at a time.)
func (s *Store) keepAnAdmin(ctx context.Context, tx *gorm.DB, k *APIKey, verb string) error {
	if s.dialect == Postgres {
		if err := tx.WithContext(ctx).Exec("SELECT id FROM tenants WHERE id = ? FOR UPDATE", k.TenantID).Error; err != nil {
			return fmt.Errorf("lock tenant: %w", err)
		}
	}
	var others int64
	err := tx.WithContext(ctx).Model(&APIKey{}).
		Where("tenant_id = ? AND id <> ? AND admin AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)", k.TenantID, k.ID, s.now()).
		Count(&others).Error
	if err != nil {
		return fmt.Errorf("count admin keys: %w", err)
	}
	if others == 0 {
		return Errorf(KindConflict, "the last admin key of a tenant cannot be %s; create another admin key first (recordhub tenant create-key TENANT_ID --admin)", verb)
	}
	return nil
}

// RotateKey gives a key a new secret. The old secret keeps working for
// grace seconds (0: stops at once). It returns the key and the new secret.
func (s *Store) RotateKey(ctx context.Context, tenantID, id string, grace int) (*APIKey, string, error) {
	if grace < 0 || grace > MaxGraceSeconds {
		return nil, "", ValidationError([]FieldError{{Field: "grace_seconds", Message: fmt.Sprintf("must be between 0 and %d", MaxGraceSeconds)}})
	}
	secret := NewAPIKeySecret()
	k, err := s.changeKey(ctx, tenantID, id, func(_ *gorm.DB, k *APIKey) (map[string]any, error) {
		if k.RevokedAt != nil {
			return nil, Errorf(KindConflict, "a revoked key cannot be rotated")
		}
		u := map[string]any{"hash": HashAPIKey(secret), "prefix": KeyPrefix(secret), "previous_hash": nil, "previous_expires_at": nil}
		if grace > 0 {
			u["previous_hash"] = k.Hash
			u["previous_expires_at"] = s.now().Add(time.Duration(grace) * time.Second)
		}
		return u, nil
	})
	if err != nil {
		return nil, "", err
	}
	return k, secret, nil
}

// changeKey applies change's updates to a key in a transaction and tells
// every replica's key cache about it.
func (s *Store) changeKey(ctx context.Context, tenantID, id string, change func(tx *gorm.DB, k *APIKey) (map[string]any, error)) (*APIKey, error) {
	var out APIKey
	err := s.write(ctx, func(tx *gorm.DB) error {
		var k APIKey
		if err := tx.Where("tenant_id = ? AND id = ?", tenantID, id).Take(&k).Error; err != nil {
			return notFoundOr(err, "load key")
		}
		u, err := change(tx, &k)
		if err != nil {
			return err
		}
		if len(u) > 0 {
			u["updated_at"] = s.now()
			if err := tx.Model(&APIKey{}).Where("id = ?", id).Updates(u).Error; err != nil {
				return fmt.Errorf("update key: %w", err)
			}
			if err := s.notifyChange(tx, "key:"+id); err != nil {
				return err
			}
		}
		if err := tx.Where("id = ?", id).Take(&out).Error; err != nil {
			return fmt.Errorf("reload key: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.caches.keys.flush()
	return &out, nil
}

// Authenticate returns the key a bearer secret names. Unknown, revoked and
// rotated-out secrets give ErrUnauthorized, expired keys ErrKeyExpired with
// the key, so that the caller can attribute the attempt.
func (s *Store) Authenticate(ctx context.Context, secret string) (*APIKey, error) {
	if secret == "" {
		return nil, ErrUnauthorized
	}
	hash := HashAPIKey(secret)
	k, err := s.caches.keys.get(hash, func() (*APIKey, error) { return s.keyByHash(ctx, hash) })
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, ErrUnauthorized
	}
	now := s.now()
	current := HashesEqual(k.Hash, hash)
	previous := k.PreviousHash != nil && HashesEqual(*k.PreviousHash, hash) &&
		k.PreviousExpiresAt != nil && now.Before(*k.PreviousExpiresAt)
	switch {
	case k.RevokedAt != nil, !current && !previous:
		return k, ErrUnauthorized
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return k, ErrKeyExpired
	}
	return k, nil
}

func (s *Store) keyByHash(ctx context.Context, hash string) (*APIKey, error) {
	var keys []APIKey
	if err := s.r.WithContext(ctx).Where("hash = ? OR previous_hash = ?", hash, hash).Limit(1).Find(&keys).Error; err != nil {
		return nil, fmt.Errorf("look up key: %w", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return &keys[0], nil
}

// TouchKeys records when keys were last used.
func (s *Store) touchKeys(tx *gorm.DB, lastUsed map[string]time.Time) error {
	for id, at := range lastUsed {
		if err := tx.Exec("UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)", at, id, at).Error; err != nil {
			return fmt.Errorf("touch key: %w", err)
		}
	}
	return nil
}
