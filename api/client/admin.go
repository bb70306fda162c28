package client

import (
	"context"
	"net/http"
)

// KeyInput is a key to create. Permissions maps a module's slug, or "*"
// for every module, to operations: "read", "write", "delete".
type KeyInput struct {
	Name               string              `json:"name,omitempty"`
	Admin              bool                `json:"admin,omitempty"`
	Permissions        map[string][]string `json:"permissions,omitempty"`
	RateLimitPerMinute int                 `json:"rate_limit_per_minute,omitempty"`
}

// Key is an API key as the API shows it; Secret is set only in the answer
// that created it.
type Key struct {
	ID                 string              `json:"id"`
	Name               string              `json:"name"`
	Prefix             string              `json:"prefix"`
	Admin              bool                `json:"admin"`
	Permissions        map[string][]string `json:"permissions"`
	RateLimitPerMinute int                 `json:"rate_limit_per_minute"`
	Secret             string              `json:"key,omitempty"`
}

// CreateKey creates a key of the client's tenant (an admin route).
func (c *Client) CreateKey(ctx context.Context, in KeyInput) (*Key, error) {
	var k Key
	if _, err := c.do(ctx, http.MethodPost, "/api/admin/keys", in, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// Field is one field of a module's schema.
type Field struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Required bool     `json:"required,omitempty"`
	Options  []string `json:"options,omitempty"`
}

// ModuleInput is a module to create.
type ModuleInput struct {
	Slug   string  `json:"slug"`
	Name   string  `json:"name"`
	Fields []Field `json:"fields"`
}

// Module is a module as the API shows it.
type Module struct {
	ID     string  `json:"id"`
	Slug   string  `json:"slug"`
	Name   string  `json:"name"`
	Fields []Field `json:"fields"`
}

// CreateModule creates a module of the client's tenant (an admin route).
func (c *Client) CreateModule(ctx context.Context, in ModuleInput) (*Module, error) {
	var m Module
	if _, err := c.do(ctx, http.MethodPost, "/api/admin/modules", in, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
