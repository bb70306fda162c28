package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// KeyInput is a key to create. Permissions maps a module's id, or "*" for
// every module, to operations: "read", "write", "delete".
type KeyInput struct {
	Name               string              `json:"name,omitempty"`
	Admin              bool                `json:"admin,omitempty"`
	Permissions        map[string][]string `json:"permissions,omitempty"`
	RateLimitPerMinute int                 `json:"rate_limit_per_minute,omitempty"`
	// ExpiresAt, in the future, is when the key stops working; nil for
	// never.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// KeyUpdate is a change of a key: what is nil stays; Permissions, when
// set, replaces them all. ClearExpiry removes the expiry (ExpiresAt is
// then ignored).
type KeyUpdate struct {
	Name               *string
	Admin              *bool
	Permissions        map[string][]string
	RateLimitPerMinute *int
	ExpiresAt          *time.Time
	ClearExpiry        bool
}

// MarshalJSON writes the members set, and expires_at null for
// ClearExpiry.
func (u KeyUpdate) MarshalJSON() ([]byte, error) {
	type members struct {
		Name               *string             `json:"name,omitempty"`
		Admin              *bool               `json:"admin,omitempty"`
		Permissions        map[string][]string `json:"permissions,omitempty"`
		RateLimitPerMinute *int                `json:"rate_limit_per_minute,omitempty"`
		ExpiresAt          json.RawMessage     `json:"expires_at,omitempty"`
	}
	m := members{Name: u.Name, Admin: u.Admin, Permissions: u.Permissions, RateLimitPerMinute: u.RateLimitPerMinute}
	switch {
	case u.ClearExpiry:
		m.ExpiresAt = json.RawMessage("null")
	case u.ExpiresAt != nil:
		b, err := json.Marshal(u.ExpiresAt)
		if err != nil {
			return nil, err
		}
		m.ExpiresAt = b
	}
	return json.Marshal(m)
}

// Key is an API key as the API shows it; Secret is set only in the answers
// to create and rotate.
type Key struct {
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
	// PreviousKeyExpiresAt is, during a rotation's grace period, when the
	// previous secret stops working.
	PreviousKeyExpiresAt *time.Time `json:"previous_key_expires_at"`
	Secret               string     `json:"key,omitempty"`
}

const keysPath = "/api/admin/keys"

func keyPath(keyID string) string { return keysPath + "/" + escape(keyID) }

// CreateKey creates a key of the client's tenant (an admin route). Its
// Secret is answered this once.
func (c *Client) CreateKey(ctx context.Context, in KeyInput) (*Key, error) {
	var k Key
	if _, err := c.do(ctx, http.MethodPost, keysPath, in, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// ListKeys reads page (from 1; 0 is the first) of the tenant's keys,
// revoked ones included, newest first, limit a page (0: the API's
// default); an admin route.
func (c *Client) ListKeys(ctx context.Context, page, limit int) (*Page[Key], error) {
	q := url.Values{}
	setPage(q, page, limit)
	var p Page[Key]
	if _, err := c.do(ctx, http.MethodGet, withQuery(keysPath, q), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetKey reads one key (an admin route).
func (c *Client) GetKey(ctx context.Context, keyID string) (*Key, error) {
	var k Key
	if _, err := c.do(ctx, http.MethodGet, keyPath(keyID), nil, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// UpdateKey changes a key (an admin route).
func (c *Client) UpdateKey(ctx context.Context, keyID string, in KeyUpdate) (*Key, error) {
	var k Key
	if _, err := c.do(ctx, http.MethodPatch, keyPath(keyID), in, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// RotateKey gives a key a new secret, answered once as Secret; the
// previous one keeps working for grace (whole seconds, at most 7 days; 0
// stops it at once). An admin route.
func (c *Client) RotateKey(ctx context.Context, keyID string, grace time.Duration) (*Key, error) {
	var k Key
	body := struct {
		GraceSeconds int64 `json:"grace_seconds"`
	}{int64(grace / time.Second)}
	if _, err := c.do(ctx, http.MethodPost, keyPath(keyID)+"/rotate", body, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// RevokeKey revokes a key, which stops working at once, and answers it
// with RevokedAt set; revoking it again changes nothing. An admin route.
func (c *Client) RevokeKey(ctx context.Context, keyID string) (*Key, error) {
	var k Key
	if _, err := c.do(ctx, http.MethodDelete, keyPath(keyID), nil, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// Granularities of a key's usage.
const (
	ByHour = "hour"
	ByDay  = "day"
)

// UsageQuery selects a key's usage: buckets of Granularity ("" is ByHour)
// whose start is in [From, To); a zero time is the API's default (To: the
// current bucket; From: 24 hours or 30 days before To).
type UsageQuery struct {
	Granularity string
	From, To    time.Time
}

// Usage is a key's calls by bucket, oldest first, buckets without calls
// left out, and their sum.
type Usage struct {
	Data    []UsageBucket `json:"data"`
	Total   int64         `json:"total"`
	Summary UsageSummary  `json:"summary"`
}

// UsageBucket is a key's calls in one hour or day (UTC).
type UsageBucket struct {
	BucketStart time.Time `json:"bucket_start"`
	Requests    int64     `json:"requests"`
	// Errors counts calls answered 4xx or 5xx, 429 excepted.
	Errors      int64 `json:"errors"`
	RateLimited int64 `json:"rate_limited"`
}

// UsageSummary adds the buckets up, with the range and granularity they
// cover.
type UsageSummary struct {
	Requests    int64     `json:"requests"`
	Errors      int64     `json:"errors"`
	RateLimited int64     `json:"rate_limited"`
	From        time.Time `json:"from"`
	To          time.Time `json:"to"`
	Granularity string    `json:"granularity"`
}

// KeyUsage reads a key's usage (an admin route).
func (c *Client) KeyUsage(ctx context.Context, keyID string, q UsageQuery) (*Usage, error) {
	v := url.Values{}
	if q.Granularity != "" {
		v.Set("granularity", q.Granularity)
	}
	setTime(v, "from", q.From)
	setTime(v, "to", q.To)
	var u Usage
	if _, err := c.do(ctx, http.MethodGet, withQuery(keyPath(keyID)+"/usage", v), nil, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// setTime adds t to q as name, in RFC 3339, unless it is zero.
func setTime(q url.Values, name string, t time.Time) {
	if !t.IsZero() {
		q.Set(name, t.Format(time.RFC3339Nano))
	}
}
