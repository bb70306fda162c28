package models

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// ModuleInput holds a module's settable attributes; nil members are left
// unchanged on update.
type ModuleInput struct {
	Slug   *string
	Name   *string
	Fields *[]Field
}

// CreateModule creates a module.
func (s *Store) CreateModule(ctx context.Context, tenantID string, in ModuleInput) (*Module, error) {
	now := s.now()
	m := &Module{ID: NewID(PrefixModule), TenantID: tenantID, Fields: FieldList{}, CreatedAt: now, UpdatedAt: now}
	if in.Slug != nil {
		m.Slug = *in.Slug
	}
	if in.Name != nil {
		m.Name = *in.Name
	}
	if in.Fields != nil {
		m.Fields = *in.Fields
	}
	if errs := ValidateModule(m.Slug, m.Name, m.Fields); len(errs) > 0 {
		return nil, ValidationError(errs)
	}
	if err := s.writer(ctx).Create(m).Error; err != nil {
		if isUniqueViolation(err) {
			return nil, Errorf(KindConflict, "a module with slug %q exists", m.Slug)
		}
		return nil, fmt.Errorf("insert module: %w", err)
	}
	return m, nil
}

// GetModule returns one of the tenant's modules. It is read on every record
// call, so it is cached (see cache.go); callers must not change it.
func (s *Store) GetModule(ctx context.Context, tenantID, id string) (*Module, error) {
	m, err := s.caches.modules.get(tenantID+"/"+id, func() (*Module, error) {
		var m Module
		err := s.r.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenantID, id).Take(&m).Error
		if err != nil {
			if errors.Is(notFoundOr(err, ""), ErrNotFound) {
				return nil, nil
			}
			return nil, fmt.Errorf("load module: %w", err)
		}
		return &m, nil
	})
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, ErrNotFound
	}
	return m, nil
}

// ListModules returns all of the tenant's modules, oldest first.
func (s *Store) ListModules(ctx context.Context, tenantID string) ([]Module, error) {
	var ms []Module
	if err := s.r.WithContext(ctx).Where("tenant_id = ?", tenantID).Order("created_at, id").Find(&ms).Error; err != nil {
		return nil, fmt.Errorf("list modules: %w", err)
	}
	return ms, nil
}

// UpdateModule changes a module's slug, name or fields. Existing records are
// not rewritten; each is validated against the new fields when next written.
func (s *Store) UpdateModule(ctx context.Context, tenantID, id string, in ModuleInput) (*Module, error) {
	var out *Module
	err := s.write(ctx, func(tx *gorm.DB) error {
		var m Module
		if err := tx.Where("tenant_id = ? AND id = ?", tenantID, id).Take(&m).Error; err != nil {
			return notFoundOr(err, "load module")
		}
		if in.Slug != nil {
			m.Slug = *in.Slug
		}
		if in.Name != nil {
			m.Name = *in.Name
		}
		if in.Fields != nil {
			m.Fields = *in.Fields
		}
		if errs := ValidateModule(m.Slug, m.Name, m.Fields); len(errs) > 0 {
			return ValidationError(errs)
		}
		m.UpdatedAt = s.now()
		err := tx.Model(&Module{}).Where("id = ?", id).
			Updates(map[string]any{"slug": m.Slug, "name": m.Name, "fields": m.Fields, "updated_at": m.UpdatedAt}).Error
		if isUniqueViolation(err) {
			return Errorf(KindConflict, "a module with slug %q exists", m.Slug)
		}
		if err != nil {
			return fmt.Errorf("update module: %w", err)
		}
		out = &m
		return s.notifyChange(tx, "module:"+id)
	})
	s.caches.modules.flush()
	return out, err
}

// DeleteModule deletes a module and its records.
func (s *Store) DeleteModule(ctx context.Context, tenantID, id string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Where("tenant_id = ? AND id = ?", tenantID, id).Delete(&Module{})
		if res.Error != nil {
			return fmt.Errorf("delete module: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		// Foreign keys cascade on both databases; say it explicitly so that
		// a SQLite connection without foreign_keys cannot leave orphans.
		for _, q := range []string{
			"DELETE FROM records WHERE module_id = ?", "DELETE FROM module_record_counts WHERE module_id = ?",
			"DELETE FROM inbound_webhooks WHERE module_id = ?", "DELETE FROM inbound_events WHERE module_id = ?",
		} {
			if err := tx.Exec(q, id).Error; err != nil {
				return fmt.Errorf("delete module rows: %w", err)
			}
		}
		return s.notifyChange(tx, "module:"+id)
	})
	s.caches.modules.flush()
	return err
}
