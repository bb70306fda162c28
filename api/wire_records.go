package api

import (
	"encoding/json"
	"time"

	"github.com/recordhub/recordhub/models"
)

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
	if f, c := r.FieldsJSON(), r.CustomDataJSON(); f != nil && c != nil {
		out.Fields, out.CustomData = f, c
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
