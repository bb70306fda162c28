package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/recordhub/recordhub/api/client"
)

// TestEventSchemas: the client reads a module's document as the API sent
// it, and a missing module is the API's 404.
func TestEventSchemas(t *testing.T) {
	ctx := context.Background()
	c := newAPI(t)
	m, err := c.CreateModule(ctx, client.ModuleInput{Slug: "orders", Name: "Orders", Fields: []client.Field{
		{Name: "size", Type: "enum", Options: []string{"s", "m"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.EventSchemas(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ID   string `json:"$id"`
		Defs struct {
			Fields struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"record_fields"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ID != "urn:recordhub:module:"+m.ID+":event-schemas" || len(doc.Defs.Fields.Properties["size"].Enum) != 2 {
		t.Errorf("document %s, want the module's $id and its enum field's options", raw)
	}
	_, err = c.EventSchemas(ctx, "mod_missing")
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("a missing module: %v, want the API's 404", err)
	}
}
