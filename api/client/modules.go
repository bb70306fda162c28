package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Field is one typed field of a module's schema. Options belong to enum
// fields; States, Initial and Transitions to status fields.
type Field struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Required bool     `json:"required,omitempty"`
	Options  []string `json:"options,omitempty"`
	States   []string `json:"states,omitempty"`
	Initial  string   `json:"initial,omitempty"`
	// Transitions maps a state to the states it may move to; nil allows
	// every move.
	Transitions map[string][]string `json:"transitions,omitempty"`
}

// ModuleInput is a module to create.
type ModuleInput struct {
	Slug   string  `json:"slug"`
	Name   string  `json:"name"`
	Fields []Field `json:"fields"`
}

// ModuleUpdate is a change of a module: what is nil stays; Fields, when
// set, replaces the whole list.
type ModuleUpdate struct {
	Slug   *string  `json:"slug,omitempty"`
	Name   *string  `json:"name,omitempty"`
	Fields *[]Field `json:"fields,omitempty"`
}

// Module is a module as the API shows it.
type Module struct {
	ID        string    `json:"id"`
	Slug      string    `json:"slug"`
	Name      string    `json:"name"`
	Fields    []Field   `json:"fields"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Permissions is what the calling key may do with the module's
	// records ("read", "write", "delete"); set by KeyModules only.
	Permissions []string `json:"permissions,omitempty"`
}

const modulesPath = "/api/admin/modules"

func modulePath(moduleID string) string { return modulesPath + "/" + escape(moduleID) }

// CreateModule creates a module of the client's tenant (an admin route).
func (c *Client) CreateModule(ctx context.Context, in ModuleInput) (*Module, error) {
	var m Module
	if _, err := c.do(ctx, http.MethodPost, modulesPath, in, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ListModules reads all the tenant's modules, oldest first (an admin
// route; not paged).
func (c *Client) ListModules(ctx context.Context) ([]Module, error) {
	var l List[Module]
	if _, err := c.do(ctx, http.MethodGet, modulesPath, nil, &l); err != nil {
		return nil, err
	}
	return l.Data, nil
}

// GetModule reads one module (an admin route).
func (c *Client) GetModule(ctx context.Context, moduleID string) (*Module, error) {
	var m Module
	if _, err := c.do(ctx, http.MethodGet, modulePath(moduleID), nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// UpdateModule changes a module (an admin route). Its records are not
// rewritten: each is checked against the new fields when next written.
func (c *Client) UpdateModule(ctx context.Context, moduleID string, in ModuleUpdate) (*Module, error) {
	var m Module
	if _, err := c.do(ctx, http.MethodPatch, modulePath(moduleID), in, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// DeleteModule deletes a module and all its records (an admin route).
func (c *Client) DeleteModule(ctx context.Context, moduleID string) error {
	_, err := c.do(ctx, http.MethodDelete, modulePath(moduleID), nil, nil)
	return err
}

// KeyModules reads the modules on which the client's key holds any
// permission, oldest first, each with its Permissions (any key).
func (c *Client) KeyModules(ctx context.Context) ([]Module, error) {
	var l List[Module]
	if _, err := c.do(ctx, http.MethodGet, "/api/modules", nil, &l); err != nil {
		return nil, err
	}
	return l.Data, nil
}

// EventSchemas reads the JSON Schema (draft 2020-12) document of the
// bodies of a module's webhook events, typed from its fields as they are
// now, as the API sent it: for a JSON Schema validator or a type generator
// (an admin route).
func (c *Client) EventSchemas(ctx context.Context, moduleID string) (json.RawMessage, error) {
	return c.do(ctx, http.MethodGet, modulePath(moduleID)+"/event-schemas", nil, nil)
}
