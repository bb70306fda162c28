package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/eventschema"
)

// The route answers the module's document as its fields are now, to admin
// keys of the module's tenant only.
func TestAdminModuleEventSchemas(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		id := e.createModule("orders",
			map[string]any{"name": "title", "type": "string", "required": true},
			map[string]any{"name": "stage", "type": "status", "states": []string{"new", "paid"}, "initial": "new"})
		path := "/api/admin/modules/" + id + "/event-schemas"

		same := func(what string) {
			t.Helper()
			m, err := e.store.GetModule(context.Background(), e.tenantID, id)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			e.call("GET", path, e.admin, nil).want(200).decode(&got)
			if err := json.Unmarshal(marshalJSON(t, eventschema.For(m)), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: the answer is not the module's document (-want +got):\n%s", what, diff)
			}
		}
		same("as created")
		var doc struct {
			Schema string                     `json:"$schema"`
			ID     string                     `json:"$id"`
			Defs   map[string]json.RawMessage `json:"$defs"`
		}
		e.call("GET", path, e.admin, nil).want(200).decode(&doc)
		if doc.Schema != eventschema.Dialect || doc.ID != eventschema.ID(id) || doc.Defs["status_change"] == nil {
			t.Errorf("$schema %q, $id %q, status_change %s", doc.Schema, doc.ID, doc.Defs["status_change"])
		}

		// A change of the fields changes the answer at once.
		e.call("PATCH", "/api/admin/modules/"+id, e.admin, map[string]any{"fields": []any{
			map[string]any{"name": "title", "type": "string", "required": true},
			map[string]any{"name": "qty", "type": "integer"},
		}}).want(200)
		same("after the fields changed")
		doc.Defs = nil
		e.call("GET", path, e.admin, nil).want(200).decode(&doc)
		if doc.Defs["status_change"] != nil {
			t.Error("status_change still described after the module lost its status field")
		}

		// Another tenant's module is not found; a key that is not an
		// admin key is refused.
		other := newEnvOn(t, e.store)
		if code := other.call("GET", path, other.admin, nil).want(404).errorCode(); code != "not_found" {
			t.Errorf("another tenant's module: %s", code)
		}
		e.call("GET", "/api/admin/modules/mod_missing/event-schemas", e.admin, nil).want(404)
		e.call("GET", "/api/admin/modules/orders/event-schemas", e.admin, nil).want(404)
		_, reader := e.createKey(map[string]any{"name": "reader", "permissions": map[string][]string{id: {"read"}}})
		e.call("GET", path, reader, nil).want(403)
	})
}

func marshalJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
