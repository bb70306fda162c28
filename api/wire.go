package api

import (
	"encoding/json"
	"time"

	"github.com/recordhub/recordhub/models"
)

// Wire types: what the API sends and takes, kept apart from storage types
// so that a column never reaches a client by accident.

type fieldJSON struct {
	Name        string              `json:"name"`
	Type        string              `json:"type"`
	Required    bool                `json:"required"`
	Options     []string            `json:"options,omitempty"`
	States      []string            `json:"states,omitempty"`
	Initial     string              `json:"initial,omitempty"`
	Transitions map[string][]string `json:"transitions,omitempty"`
}

type moduleJSON struct {
	ID          string      `json:"id"`
	Slug        string      `json:"slug"`
	Name        string      `json:"name"`
	Fields      []fieldJSON `json:"fields"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
	Permissions []string    `json:"permissions,omitempty"`
}

func moduleOut(m *models.Module) moduleJSON {
	out := moduleJSON{ID: m.ID, Slug: m.Slug, Name: m.Name, Fields: make([]fieldJSON, len(m.Fields)), CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
	for i, f := range m.Fields {
		out.Fields[i] = fieldJSON(f)
	}
	return out
}

func fieldsIn(in []fieldJSON) []models.Field {
	out := make([]models.Field, len(in))
	for i, f := range in {
		out[i] = models.Field(f)
	}
	return out
}

type moduleInput struct {
	Slug   *string      `json:"slug"`
	Name   *string      `json:"name"`
	Fields *[]fieldJSON `json:"fields"`
}

func (in moduleInput) model() models.ModuleInput {
	out := models.ModuleInput{Slug: in.Slug, Name: in.Name}
	if in.Fields != nil {
		f := fieldsIn(*in.Fields)
		out.Fields = &f
	}
	return out
}

// recordJSON is a record on the wire as answered to writes; reads write
// the same shape from the stored JSON (recordjson.go).
type recordJSON struct {
	ID         string    `json:"id"`
	ModuleID   string    `json:"module_id"`
	Fields     any       `json:"fields"`
	CustomData any       `json:"custom_data"`
	Version    int64     `json:"version"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func recordOut(r *models.Record) recordJSON {
	out := recordJSON{ID: r.ID, ModuleID: r.ModuleID, Fields: r.Fields, CustomData: r.CustomData, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Fields == nil {
		out.Fields = map[string]any{}
	}
	if r.CustomData == nil {
		out.CustomData = map[string]any{}
	}
	return out
}

func rawObject(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

type recordInput struct {
	Fields     map[string]any `json:"fields"`
	CustomData map[string]any `json:"custom_data"`
}

type keyJSON struct {
	ID                 string              `json:"id"`
	Name               string              `json:"name"`
	Prefix             string              `json:"prefix"`
	Admin              bool                `json:"admin"`
	Permissions        map[string][]string `json:"permissions"`
	RateLimitPerMinute int                 `json:"rate_limit_per_minute"`
	ExpiresAt          *time.Time          `json:"expires_at"`
	CreatedAt          time.Time           `json:"created_at"`
	UpdatedAt          time.Time           `json:"updated_at"`
	LastUsedAt         *time.Time          `json:"last_used_at"`
	RevokedAt          *time.Time          `json:"revoked_at"`
	// PreviousExpiresAt is when the secret replaced by the last rotation
	// stops working; null when it already has.
	PreviousExpiresAt *time.Time `json:"previous_key_expires_at"`
	// Key is the secret, present only in the answers to create and rotate.
	Key string `json:"key,omitempty"`
}

func keyOut(k *models.APIKey, now time.Time) keyJSON {
	out := keyJSON{
		ID: k.ID, Name: k.Name, Prefix: k.Prefix, Admin: k.Admin, Permissions: k.Permissions,
		RateLimitPerMinute: k.RateLimitPerMinute, ExpiresAt: k.ExpiresAt, CreatedAt: k.CreatedAt,
		UpdatedAt: k.UpdatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt,
	}
	if out.Permissions == nil {
		out.Permissions = map[string][]string{}
	}
	if k.PreviousExpiresAt != nil && k.PreviousExpiresAt.After(now) {
		out.PreviousExpiresAt = k.PreviousExpiresAt
	}
	return out
}

type accessLogJSON struct {
	ID         string    `json:"id"`
	TenantID   *string   `json:"tenant_id"`
	KeyID      *string   `json:"key_id"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Route      string    `json:"route"`
	ModuleID   *string   `json:"module_id"`
	Status     int       `json:"status"`
	DurationMS float64   `json:"duration_ms"`
	IP         string    `json:"ip"`
	UserAgent  string    `json:"user_agent"`
	RequestID  string    `json:"request_id"`
	CreatedAt  time.Time `json:"created_at"`
}

func accessLogOut(l *models.AccessLog) accessLogJSON {
	return accessLogJSON(*l)
}

type usageJSON struct {
	BucketStart time.Time `json:"bucket_start"`
	Requests    int64     `json:"requests"`
	Errors      int64     `json:"errors"`
	RateLimited int64     `json:"rate_limited"`
}
