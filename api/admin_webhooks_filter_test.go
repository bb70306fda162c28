package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// TestWebhookEndpointFilter: filter through the admin API. A valid one is
// answered as given (numbers as numbers) by create, GET and list; bad
// ones (operators included) are 422 naming filter.<field>; PATCH
// replaces it, operators and all, {} removes it.
func TestWebhookEndpointFilter(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		mod := e.createModule("orders", orderFields...)
		body := func(filter any, modules ...string) map[string]any {
			if modules == nil {
				modules = []string{mod}
			}
			return map[string]any{"url": "https://hooks.example.com/f", "events": []string{"status_change"}, "module_ids": modules, "filter": filter}
		}
		const path = "/api/admin/webhook-endpoints"

		for _, c := range []struct {
			name   string
			body   map[string]any
			fields []string
		}{
			{"no modules", body(map[string]any{"status": "shipped"}, []string{}...), []string{"filter"}},
			{"unknown field", body(map[string]any{"colour": "red"}), []string{"filter.colour"}},
			{"json field", body(map[string]any{"meta": "x"}), []string{"filter.meta"}},
			{"string for integer", body(map[string]any{"qty": "seven"}), []string{"filter.qty"}},
			{"number for boolean", body(map[string]any{"paid": 1}), []string{"filter.paid"}},
			{"not a state", body(map[string]any{"status": "lost"}), []string{"filter.status"}},
			{"not an option", body(map[string]any{"size": "xl"}), []string{"filter.size"}},
			{"unknown operator", body(map[string]any{"status": map[string]any{"$in": []string{"paid"}}}), []string{"filter.status"}},
			{"operator the type does not take", body(map[string]any{"paid": map[string]any{"gt": true}}), []string{"filter.paid"}},
			{"operator value of the wrong type", body(map[string]any{"qty": map[string]any{"gte": "7"}}), []string{"filter.qty"}},
			{"in over 100 values", body(map[string]any{"qty": map[string]any{"in": make([]int, 101)}}), []string{"filter.qty"}},
			{"in not a list", body(map[string]any{"status": map[string]any{"in": "paid"}}), []string{"filter.status"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				wantDetails(t, e.on(t).call("POST", path, e.admin, c.body), c.fields...)
			})
		}
		e.call("POST", path, e.admin, body("status=shipped")).want(422)

		ep := e.createEndpoint(body(map[string]any{"status": "shipped", "qty": 7, "paid": true}))
		id := ep["id"].(string)
		want := map[string]any{"status": "shipped", "qty": float64(7), "paid": true}
		if diff := cmp.Diff(want, ep["filter"]); diff != "" {
			t.Errorf("create answer's filter (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, e.call("GET", path+"/"+id, e.admin, nil).want(200).json()["filter"]); diff != "" {
			t.Errorf("GET filter (-want +got):\n%s", diff)
		}

		got := e.call("PATCH", path+"/"+id, e.admin, map[string]any{"filter": map[string]any{"status": "paid"}}).want(200).json()
		if diff := cmp.Diff(map[string]any{"status": "paid"}, got["filter"]); diff != "" {
			t.Errorf("PATCH filter (-want +got):\n%s", diff)
		}
		// Operators: answered as given, an object per field.
		ops := map[string]any{"status": map[string]any{"in": []any{"paid", "shipped"}}, "qty": map[string]any{"gte": float64(1), "lt": float64(10)}, "due": map[string]any{"exists": false}}
		got = e.call("PATCH", path+"/"+id, e.admin, map[string]any{"filter": ops}).want(200).json()
		if diff := cmp.Diff(ops, got["filter"]); diff != "" {
			t.Errorf("PATCH filter with operators (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(ops, e.call("GET", path+"/"+id, e.admin, nil).want(200).json()["filter"]); diff != "" {
			t.Errorf("GET filter with operators (-want +got):\n%s", diff)
		}
		wantDetails(t, e.call("PATCH", path+"/"+id, e.admin, map[string]any{"filter": map[string]any{"qty": 1.5}}), "filter.qty")
		wantDetails(t, e.call("PATCH", path+"/"+id, e.admin, map[string]any{"module_ids": []string{}}), "filter")
		got = e.call("PATCH", path+"/"+id, e.admin, map[string]any{"filter": map[string]any{}, "module_ids": []string{}}).want(200).json()
		if diff := cmp.Diff(map[string]any{}, got["filter"]); diff != "" {
			t.Errorf("filter after {} (-want +got):\n%s", diff)
		}
	})
}

// TestWebhookEndpointFilterBounds: a condition's value is at most
// models.MaxFilterValueBytes, the whole filter models.MaxFilterBytes of
// JSON; beyond either the endpoint is refused, 422 naming the field and
// the bound, on both databases alike.
func TestWebhookEndpointFilterBounds(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		e := newEnv(t, d)
		var fields []map[string]any
		for i := range models.MaxFilterConditions {
			fields = append(fields, map[string]any{"name": fmt.Sprintf("s%d", i), "type": "string"})
		}
		mod := e.createModule("notes", fields...)
		body := func(filter map[string]any) map[string]any {
			return map[string]any{"url": "https://hooks.example.com/f", "events": []string{"record_created"}, "module_ids": []string{mod}, "filter": filter}
		}
		const path = "/api/admin/webhook-endpoints"
		value := strings.Repeat("v", models.MaxFilterValueBytes)
		id := e.createEndpoint(body(map[string]any{"s0": value}))["id"].(string)

		refusedOn(t, e.call("POST", path, e.admin, body(map[string]any{"s0": strings.Repeat("v", 1_000_000)})), "filter.s0", models.MaxFilterValueBytes)
		refusedOn(t, e.call("PATCH", path+"/"+id, e.admin, map[string]any{"filter": map[string]any{"s1": value + "v"}}), "filter.s1", models.MaxFilterValueBytes)
		whole := map[string]any{}
		for i := 0; len(whole)*models.MaxFilterValueBytes <= models.MaxFilterBytes; i++ {
			whole[fmt.Sprintf("s%d", i)] = value
		}
		refusedOn(t, e.call("POST", path, e.admin, body(whole)), "filter", models.MaxFilterBytes)
	})
}
