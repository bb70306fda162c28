package api

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/recordhub/recordhub/models"
)

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

// keyInput is the body of key create and change. expires_at distinguishes
// absent (unchanged) from null (never expires).
type keyInput struct {
	Name               *string             `json:"name"`
	Admin              *bool               `json:"admin"`
	Permissions        map[string][]string `json:"permissions"`
	RateLimitPerMinute *int                `json:"rate_limit_per_minute"`
	ExpiresAt          json.RawMessage     `json:"expires_at"`
}

func (in keyInput) model() (models.KeyInput, error) {
	out := models.KeyInput{Name: in.Name, Admin: in.Admin, Permissions: in.Permissions, RateLimitPerMinute: in.RateLimitPerMinute}
	switch string(in.ExpiresAt) {
	case "":
	case "null":
		out.ClearExpiry = true
	default:
		var v string
		if err := json.Unmarshal(in.ExpiresAt, &v); err != nil {
			return out, models.ValidationError([]models.FieldError{{Field: "expires_at", Message: "must be an RFC 3339 date-time or null"}})
		}
		t, err := models.ParseTime(v)
		if errors.Is(err, models.ErrTimeFormat) {
			return out, models.ValidationError([]models.FieldError{{Field: "expires_at", Message: "must be an RFC 3339 date-time or null"}})
		} else if err != nil {
			return out, models.ValidationError([]models.FieldError{{Field: "expires_at", Message: err.Error()}})
		}
		out.ExpiresAt = &t
	}
	return out, nil
}

// graceInput is the body of key rotate and endpoint secret rotate: how
// long the secret replaced stays valid.
type graceInput struct {
	GraceSeconds int `json:"grace_seconds"`
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

// usageSummaryJSON totals a key's usage over the window answered.
type usageSummaryJSON struct {
	Requests    int64     `json:"requests"`
	Errors      int64     `json:"errors"`
	RateLimited int64     `json:"rate_limited"`
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	Granularity string    `json:"granularity"`
}

// usageList is a key's usage, bucket by bucket, with its totals.
type usageList struct {
	list[usageJSON]
	Summary usageSummaryJSON `json:"summary"`
}
