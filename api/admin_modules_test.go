package api_test

import (
	"net/http"
	"testing"

	"github.com/recordhub/recordhub/models"
)

func TestAdminModules(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"bad slug", map[string]any{"slug": "Has Space", "name": "x"}, "slug"},
			{"empty name", map[string]any{"slug": "ok", "name": ""}, "name"},
			{"unknown type", map[string]any{"slug": "ok", "name": "x", "fields": []any{map[string]any{"name": "a", "type": "money"}}}, "fields[0].type"},
			{"bad field name", map[string]any{"slug": "ok", "name": "x", "fields": []any{map[string]any{"name": "1a", "type": "string"}}}, "fields[0].name"},
			{"duplicate field", map[string]any{"slug": "ok", "name": "x", "fields": []any{map[string]any{"name": "a", "type": "string"}, map[string]any{"name": "a", "type": "text"}}}, "fields[1].name"},
			{"enum without options", map[string]any{"slug": "ok", "name": "x", "fields": []any{map[string]any{"name": "a", "type": "enum"}}}, "fields[0].options"},
			{"status without states", map[string]any{"slug": "ok", "name": "x", "fields": []any{map[string]any{"name": "s", "type": "status"}}}, "fields[0].states"},
			{"initial outside states", map[string]any{"slug": "ok", "name": "x", "fields": []any{map[string]any{"name": "s", "type": "status", "states": []string{"a"}, "initial": "b"}}}, "fields[0].initial"},
			{"transition to unknown state", map[string]any{"slug": "ok", "name": "x", "fields": []any{map[string]any{"name": "s", "type": "status", "states": []string{"a"}, "transitions": map[string][]string{"a": {"z"}}}}}, "fields[0].transitions"},
		} {
			t.Run(c.name, func(t *testing.T) {
				e := e.on(t)
				r := e.call("POST", "/api/admin/modules", e.admin, c.body).want(http.StatusUnprocessableEntity)
				var body struct {
					Details []struct{ Field string }
				}
				r.decode(&body)
				if len(body.Details) == 0 || body.Details[0].Field != c.field {
					t.Errorf("details %s, want the first naming %s", r.body, c.field)
				}
			})
		}

		id := e.createModule("orders", map[string]any{"name": "title", "type": "string", "required": true})
		r := e.call("POST", "/api/admin/modules", e.admin, map[string]any{"slug": "orders", "name": "again"}).want(http.StatusConflict)
		if r.errorCode() != "conflict" {
			t.Errorf("duplicate slug: %s", r.body)
		}
		var list struct {
			Data  []struct{ ID, Slug string }
			Total int
		}
		e.call("GET", "/api/admin/modules", e.admin, nil).want(200).decode(&list)
		if list.Total != 1 || list.Data[0].ID != id {
			t.Errorf("list %+v", list)
		}

		// Changing fields applies to later writes.
		rec := e.createRecord(id, map[string]any{"title": "a"})
		r = e.call("PATCH", "/api/admin/modules/"+id, e.admin, map[string]any{"name": "Orders", "fields": []any{
			map[string]any{"name": "title", "type": "string", "required": true},
			map[string]any{"name": "qty", "type": "integer"},
		}}).want(200)
		if r.json()["name"] != "Orders" {
			t.Errorf("renamed: %s", r.body)
		}
		e.call("PATCH", "/api/modules/"+id+"/records/"+rec, e.admin, map[string]any{"fields": map[string]any{"qty": 2}}).want(200)
		e.call("PATCH", "/api/admin/modules/"+id, e.admin, map[string]any{"slug": "Bad Slug"}).want(422)
		e.call("GET", "/api/admin/modules/"+id, e.admin, nil).want(200)

		r = e.call("DELETE", "/api/admin/modules/"+id, e.admin, nil).want(200)
		if r.json()["deleted"] != true {
			t.Errorf("delete: %s", r.body)
		}
		e.call("GET", "/api/admin/modules/"+id, e.admin, nil).want(404)
		e.call("GET", "/api/modules/"+id+"/records/"+rec, e.admin, nil).want(404)
		e.call("DELETE", "/api/admin/modules/"+id, e.admin, nil).want(404)
		// The slug is free again.
		e.createModule("orders")
	})
}
