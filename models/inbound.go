package models

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/recordhub/recordhub/models/mapping"
)

// Inbound webhook bounds and prefixes.
const (
	PrefixInboundWebhook = "ibw_"
	PrefixInboundEvent   = "ibe_"
	// InboundRateLimit is the per-minute budget of one inbound webhook.
	InboundRateLimit = 60
)

// matchKeyPattern limits the custom_data keys a match may use to those that
// need no quoting in a JSON path.
var matchKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// InboundWebhook is a module's public endpoint for payloads from other
// systems. Token and Secret are sealed; TokenHash finds the webhook from
// the URL without comparing tokens.
type InboundWebhook struct {
	ID              string `gorm:"primaryKey"`
	TenantID        string
	ModuleID        string
	TokenHash       string
	Token           string
	Secret          *string
	SignatureScheme string
	Mapping         RuleList   `gorm:"type:text"`
	MatchFields     StringList `gorm:"type:text"`
	Enabled         bool
	CreatedAt       time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt       time.Time `gorm:"autoUpdateTime:false"`
}

// RuleList is an inbound webhook's mapping rules.
type RuleList = JSONArray[mapping.Rule]

// InboundInput configures a module's inbound webhook; it replaces the whole
// configuration except the secret, which Secret and ClearSecret change.
type InboundInput struct {
	// Secret, when set, becomes the signing secret.
	Secret *string
	// ClearSecret removes the secret: calls need no signature any more.
	ClearSecret bool
	// SignatureScheme is one of InboundSchemes; empty is the first.
	SignatureScheme string
	Mapping         []mapping.Rule
	MatchFields     []string
	Enabled         bool
}

// InboundSchemes are the signature schemes an inbound webhook may use;
// api/inbound verifies them.
var InboundSchemes = []string{"sha256", "github", "standard_webhooks"}

// validateInbound checks a configuration against the module it maps into.
func validateInbound(m *Module, in InboundInput) []FieldError {
	var errs []FieldError
	if in.Secret != nil && (len(*in.Secret) < 16 || len(*in.Secret) > 512) {
		errs = append(errs, FieldError{Field: "secret", Message: "must be 16 to 512 characters"})
	}
	if !slices.Contains(InboundSchemes, in.SignatureScheme) {
		errs = append(errs, FieldError{Field: "signature_scheme", Message: "must be one of " + strings.Join(InboundSchemes, ", ")})
	}
	if len(in.Mapping) == 0 {
		errs = append(errs, FieldError{Field: "mapping", Message: "give at least one rule"})
	}
	_, problems := mapping.Compile(in.Mapping)
	bad := map[string]bool{}
	for _, p := range problems {
		at := fmt.Sprintf("mapping[%d].%s", p.Rule, p.Attr)
		bad[at] = true
		errs = append(errs, FieldError{Field: at, Message: p.Message})
	}
	// Rules whose field parses are checked against the module even when
	// other rules are wrong, so that one answer names every problem.
	var targets []mapping.Target
	for i, r := range in.Mapping {
		t, err := mapping.ParseTarget(r.Field)
		if err != nil {
			continue
		}
		targets = append(targets, t)
		at := fmt.Sprintf("mapping[%d].field", i)
		if _, ok := m.Field(t.Name); !t.Custom && !ok && !bad[at] {
			errs = append(errs, FieldError{Field: at, Message: fmt.Sprintf("the module has no field %q", t.Name)})
		}
	}
	if len(in.MatchFields) > MaxMatchFields {
		errs = append(errs, FieldError{Field: "match_fields", Message: fmt.Sprintf("at most %d fields", MaxMatchFields)})
	}
	for i, name := range in.MatchFields {
		at := fmt.Sprintf("match_fields[%d]", i)
		t, err := mapping.ParseTarget(name)
		f, isField := m.Field(t.Name)
		switch {
		case err != nil:
			errs = append(errs, FieldError{Field: at, Message: err.Error()})
		case slices.Index(in.MatchFields, name) < i:
			errs = append(errs, FieldError{Field: at, Message: "duplicate match field"})
		case t.Custom && !matchKeyPattern.MatchString(t.Name):
			errs = append(errs, FieldError{Field: at, Message: "a custom_data match key must be 1-128 characters of letters, digits, '-' or '_'"})
		case !slices.Contains(targets, t):
			errs = append(errs, FieldError{Field: at, Message: "no mapping rule writes this field"})
		case !t.Custom && isField && f.Type == TypeJSON:
			errs = append(errs, FieldError{Field: at, Message: "a json field cannot be matched on"})
		}
	}
	slices.SortStableFunc(errs, compareFields)
	return errs
}

// ConfigureInbound creates or replaces the inbound webhook of a module. It
// returns the webhook, its token in clear and whether it was created.
func (s *Store) ConfigureInbound(ctx context.Context, tenantID, moduleID string, in InboundInput) (*InboundWebhook, string, bool, error) {
	m, err := s.GetModule(ctx, tenantID, moduleID)
	if err != nil {
		return nil, "", false, err
	}
	if in.SignatureScheme == "" {
		in.SignatureScheme = InboundSchemes[0]
	}
	if errs := validateInbound(m, in); len(errs) > 0 {
		return nil, "", false, ValidationError(errs)
	}
	var (
		w       InboundWebhook
		token   string
		created bool
	)
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.now()
		err := tx.Where("module_id = ? AND tenant_id = ?", m.ID, tenantID).Take(&w).Error
		switch {
		case err == nil:
			created = false
		case errors.Is(err, gorm.ErrRecordNotFound):
			created = true
			w = InboundWebhook{ID: NewID(PrefixInboundWebhook), TenantID: tenantID, ModuleID: m.ID, CreatedAt: now}
			token = randomToken(32)
			w.TokenHash, w.Token = HashAPIKey(token), s.box.Seal(token, "inbound-token:"+w.ID)
		default:
			return fmt.Errorf("load inbound webhook: %w", err)
		}
		if in.Secret != nil {
			sealed := s.box.Seal(*in.Secret, "inbound-secret:"+w.ID)
			w.Secret = &sealed
		} else if in.ClearSecret {
			w.Secret = nil
		}
		w.SignatureScheme, w.Mapping, w.MatchFields, w.Enabled, w.UpdatedAt = in.SignatureScheme, in.Mapping, in.MatchFields, in.Enabled, now
		if w.MatchFields == nil {
			w.MatchFields = StringList{}
		}
		if created {
			err = tx.Create(&w).Error
		} else {
			err = tx.Select("*").Updates(&w).Error
		}
		if isUniqueViolation(err) {
			return Errorf(KindConflict, "the inbound webhook of this module is being configured concurrently; try again")
		}
		if err != nil {
			return fmt.Errorf("save inbound webhook: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, "", false, err
	}
	if !created {
		if token, err = s.InboundToken(&w); err != nil {
			return nil, "", false, err
		}
	}
	return &w, token, created, nil
}

// GetInbound returns the inbound webhook of one of the tenant's modules.
func (s *Store) GetInbound(ctx context.Context, tenantID, moduleID string) (*InboundWebhook, error) {
	var w InboundWebhook
	if err := s.r.WithContext(ctx).Where("module_id = ? AND tenant_id = ?", moduleID, tenantID).Take(&w).Error; err != nil {
		return nil, notFoundOr(err, "load inbound webhook")
	}
	return &w, nil
}

// DeleteInbound removes a module's inbound webhook; its URL stops working
// at once. The inbound events it received are kept.
func (s *Store) DeleteInbound(ctx context.Context, tenantID, moduleID string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Where("module_id = ? AND tenant_id = ?", moduleID, tenantID).Delete(&InboundWebhook{})
		if res.Error != nil {
			return fmt.Errorf("delete inbound webhook: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// RotateInboundToken gives a module's inbound webhook a new token; the old
// URL stops working at once. It returns the webhook and the new token.
func (s *Store) RotateInboundToken(ctx context.Context, tenantID, moduleID string) (*InboundWebhook, string, error) {
	w, err := s.GetInbound(ctx, tenantID, moduleID)
	if err != nil {
		return nil, "", err
	}
	token := randomToken(32)
	w.TokenHash, w.Token, w.UpdatedAt = HashAPIKey(token), s.box.Seal(token, "inbound-token:"+w.ID), s.now()
	err = s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&InboundWebhook{}).Where("id = ? AND tenant_id = ?", w.ID, tenantID).
			Updates(map[string]any{"token_hash": w.TokenHash, "token": w.Token, "updated_at": w.UpdatedAt})
		if res.Error != nil {
			return fmt.Errorf("rotate inbound token: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return w, token, nil
}

// InboundToken returns the webhook's URL token in clear.
func (s *Store) InboundToken(w *InboundWebhook) (string, error) {
	token, err := s.box.Open(w.Token, "inbound-token:"+w.ID)
	if err != nil {
		return "", fmt.Errorf("inbound token of %s: %w", w.ID, err)
	}
	return token, nil
}

// InboundSecret returns the webhook's signing secret in clear, and false
// when it has none.
func (s *Store) InboundSecret(w *InboundWebhook) (string, bool, error) {
	if w.Secret == nil {
		return "", false, nil
	}
	secret, err := s.box.Open(*w.Secret, "inbound-secret:"+w.ID)
	if err != nil {
		return "", false, fmt.Errorf("inbound secret of %s: %w", w.ID, err)
	}
	return secret, true, nil
}

// LookupInbound finds the inbound webhook that a public URL names. The
// token is found by its hash, in one indexed query whatever is wrong, so
// that an unknown slug, an unknown token and a mismatched pair answer
// alike and in the same time.
func (s *Store) LookupInbound(ctx context.Context, slug, token string) (*InboundWebhook, error) {
	var w InboundWebhook
	err := s.r.WithContext(ctx).Table("inbound_webhooks").Select("inbound_webhooks.*").
		Joins("JOIN modules ON modules.id = inbound_webhooks.module_id AND modules.tenant_id = inbound_webhooks.tenant_id").
		Where("inbound_webhooks.token_hash = ? AND modules.slug = ?", HashAPIKey(token), slug).
		Take(&w).Error
	if err != nil {
		return nil, notFoundOr(err, "look up inbound webhook")
	}
	return &w, nil
}
