package api

import (
	"time"

	"github.com/recordhub/recordhub/models"
)

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

// moduleRefJSON names a module where another object refers to it.
type moduleRefJSON struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
	Name string `json:"name"`
}

func moduleRefOut(m *models.Module) moduleRefJSON {
	return moduleRefJSON{ID: m.ID, Slug: m.Slug, Name: m.Name}
}
