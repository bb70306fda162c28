package models_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// filterOpCase is one filter and the records it selects, by name.
type filterOpCase struct {
	filter map[string]any
	want   []string
}

// filterOpCases run each operator on each field type over the records of
// filterOpRecords. code and flag hold values of their earlier types (a
// string, a boolean) in a and b: a condition of the current type must
// pass them over alike everywhere, which on PostgreSQL, whose jsonb orders
// strings and booleans after numbers, needs the type check.
var filterOpCases = []filterOpCase{
	{map[string]any{"title": "apple"}, []string{"a"}},
	{map[string]any{"title": map[string]any{"eq": "apple"}}, []string{"a"}},
	{map[string]any{"price": json.Number("2.0")}, []string{"b"}},
	{map[string]any{"gift": true}, []string{"a", "d"}},
	{map[string]any{"due": "2026-01-01T00:00:00Z"}, []string{"a"}},
	{map[string]any{"code": 7}, []string{"d"}},

	{map[string]any{"title": map[string]any{"ne": "apple"}}, []string{"b", "c", "d"}},
	{map[string]any{"gift": map[string]any{"ne": true}}, []string{"b"}},
	{map[string]any{"status": map[string]any{"ne": "paid"}}, []string{"a", "c", "e"}},
	{map[string]any{"code": map[string]any{"ne": 7}}, []string{"e"}},
	{map[string]any{"flag": map[string]any{"ne": 1}}, []string{"e"}},
	{map[string]any{"price": map[string]any{"ne": 2}}, []string{"a", "c", "d"}},

	{map[string]any{"qty": map[string]any{"gt": 1}}, []string{"b", "d"}},
	{map[string]any{"qty": map[string]any{"gte": 1}}, []string{"a", "b", "d"}},
	{map[string]any{"qty": map[string]any{"lt": 1}}, []string{"c"}},
	{map[string]any{"qty": map[string]any{"lte": -3}}, []string{"c"}},
	{map[string]any{"qty": map[string]any{"gt": json.Number("9223372036854775806")}}, []string{"d"}},
	{map[string]any{"price": map[string]any{"gt": 1.5}}, []string{"b", "d"}},
	{map[string]any{"price": map[string]any{"gte": 1.5, "lt": 2}}, []string{"a"}},
	{map[string]any{"price": map[string]any{"lte": json.Number("2.00")}}, []string{"a", "b", "c"}},
	{map[string]any{"price": map[string]any{"gt": json.Number("1e299")}}, []string{"d"}},
	{map[string]any{"title": map[string]any{"gt": "apple"}}, []string{"c", "d"}},
	{map[string]any{"title": map[string]any{"lt": "b"}}, []string{"a", "b"}},
	{map[string]any{"title": map[string]any{"lte": "Apple"}}, []string{"b"}},
	{map[string]any{"due": map[string]any{"gt": "2026-01-01T00:00:00Z"}}, []string{"b"}},
	{map[string]any{"due": map[string]any{"lt": "2026-01-01T00:00:00Z"}}, []string{"c"}},
	{map[string]any{"due": map[string]any{"gte": "2025-12-31T23:59:59Z", "lte": "2026-01-01T00:00:00Z"}}, []string{"a", "c"}},
	{map[string]any{"code": map[string]any{"gt": 0}}, []string{"d", "e"}},
	{map[string]any{"flag": map[string]any{"gte": 0}}, []string{"d", "e"}},
	{map[string]any{"code": map[string]any{"lt": 100}}, []string{"d", "e"}},

	{map[string]any{"status": map[string]any{"in": []any{"paid", "shipped"}}}, []string{"b", "c", "d"}},
	{map[string]any{"qty": map[string]any{"in": []any{1, -3, 5}}}, []string{"a", "c"}},
	{map[string]any{"price": map[string]any{"in": []any{2, 0.25}}}, []string{"b", "c"}},
	{map[string]any{"title": map[string]any{"in": []any{"Apple", "äpfel"}}}, []string{"b", "d"}},
	{map[string]any{"due": map[string]any{"in": []any{"2026-06-01T00:00:00.5Z"}}}, []string{"b"}},
	{map[string]any{"code": map[string]any{"in": []any{7, 12}}}, []string{"d", "e"}},

	{map[string]any{"title": map[string]any{"prefix": "app"}}, []string{"a"}},
	{map[string]any{"title": map[string]any{"prefix": "ä"}}, []string{"d"}},
	{map[string]any{"title": map[string]any{"prefix": ""}}, []string{"a", "b", "c", "d"}},
	{map[string]any{"color": map[string]any{"prefix": "r"}}, []string{"a", "c"}},
	{map[string]any{"status": map[string]any{"prefix": "sh"}}, []string{"c"}},

	{map[string]any{"due": map[string]any{"exists": true}}, []string{"a", "b", "c"}},
	{map[string]any{"due": map[string]any{"exists": false}}, []string{"d", "e"}},
	{map[string]any{"gift": map[string]any{"exists": false}}, []string{"c", "e"}},
	{map[string]any{"code": map[string]any{"exists": true}}, []string{"a", "b", "d", "e"}},
	{map[string]any{"title": map[string]any{"exists": false}}, []string{"e"}},

	{map[string]any{"status": map[string]any{"in": []any{"new", "paid"}}, "qty": map[string]any{"gte": 1}}, []string{"a", "b", "d"}},
	{map[string]any{"title": "apple", "gift": false}, nil},
}

// filterOpRecords creates a module with a field of each type a filter
// may name, and records a to e on it; it returns the module and the
// record ids by name.
func filterOpRecords(t *testing.T, s *models.Store) (tenantID string, m *models.Module, names map[string]string) {
	t.Helper()
	ctx := t.Context()
	tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	slug, name := "orders", "Orders"
	fields := []models.Field{
		{Name: "title", Type: models.TypeString},
		{Name: "qty", Type: models.TypeInteger},
		{Name: "price", Type: models.TypeNumber},
		{Name: "gift", Type: models.TypeBoolean},
		{Name: "due", Type: models.TypeDatetime},
		{Name: "color", Type: models.TypeEnum, Options: []string{"red", "blue"}},
		{Name: "status", Type: models.TypeStatus, States: []string{"new", "paid", "shipped"}, Initial: "new"},
		{Name: "code", Type: models.TypeString},
		{Name: "flag", Type: models.TypeBoolean},
	}
	m, err = s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	names = map[string]string{}
	create := func(n string, f map[string]any) {
		t.Helper()
		r, err := s.CreateRecord(ctx, m, f, nil)
		if err != nil {
			t.Fatalf("record %s: %v", n, err)
		}
		names[r.ID] = n
	}
	create("a", map[string]any{"title": "apple", "qty": 1, "price": 1.5, "gift": true, "due": "2026-01-01T00:00:00Z", "color": "red", "status": "new", "code": "7", "flag": true})
	create("b", map[string]any{"title": "Apple", "qty": 10, "price": 2, "gift": false, "due": "2026-06-01T00:00:00.5Z", "color": "blue", "status": "paid", "code": "x"})
	create("c", map[string]any{"title": "banana", "qty": -3, "price": 0.25, "due": "2025-12-31T23:59:59Z", "color": "red", "status": "shipped"})

	fields[7].Type, fields[8].Type = models.TypeInteger, models.TypeInteger
	if m, err = s.UpdateModule(ctx, tenant.ID, m.ID, models.ModuleInput{Name: &name, Fields: &fields}); err != nil {
		t.Fatal(err)
	}
	create("d", map[string]any{"title": "äpfel", "qty": json.Number("9223372036854775807"), "price": json.Number("1e300"), "gift": true, "status": "paid", "code": 7, "flag": 1})
	create("e", map[string]any{"code": 12, "flag": 0})
	return tenant.ID, m, names
}

// TestFilterOperatorsAlike: each case's filter, validated as an endpoint's
// filter and stored, selects the same records through the records list on
// both databases and through the endpoint matcher: the SQL and the Go
// comparison answer alike.
func TestFilterOperatorsAlike(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		s := storetest.Open(t, d)
		tenantID, m, names := filterOpRecords(t, s)
		all, _, err := s.ListRecords(ctx, m, models.RecordQuery{Page: models.Page{Page: 1, Limit: 100}})
		if err != nil {
			t.Fatal(err)
		}
		recordFields := map[string]map[string]any{}
		for _, v := range all {
			var f map[string]any
			if err := models.DecodeJSON(v.Fields, &f); err != nil {
				t.Fatal(err)
			}
			recordFields[names[v.ID]] = f
		}
		for _, c := range filterOpCases {
			ep, err := filteredEndpoint(t, s, tenantID, []string{m.ID}, c.filter)
			if err != nil {
				t.Errorf("%v: %v", c.filter, err)
				continue
			}
			q := models.RecordQuery{Page: models.Page{Page: 1, Limit: 100}, Sort: "created_at", Filters: ep.Filter}
			recs, total, err := s.ListRecords(ctx, m, q)
			if err != nil {
				t.Errorf("%v: list: %v", c.filter, err)
				continue
			}
			var listed []string
			for _, r := range recs {
				listed = append(listed, names[r.ID])
			}
			if diff := cmp.Diff(c.want, listed); diff != "" || total != int64(len(c.want)) {
				t.Errorf("%v: list of %d (-want +got):\n%s", c.filter, total, diff)
			}
			var matched []string
			for _, n := range []string{"a", "b", "c", "d", "e"} {
				if ep.Filter.Matches(recordFields[n]) {
					matched = append(matched, n)
				}
			}
			if diff := cmp.Diff(c.want, matched); diff != "" {
				t.Errorf("%v: matcher (-want +got):\n%s", c.filter, diff)
			}
		}
	})
}

// TestFilterOperatorsRefused: an operator the field's type does not
// take, an unknown one, a value of the wrong type and an in list over
// models.MaxFilterInValues are refused naming the field and why; each
// operator counts towards models.MaxFilterConditions.
func TestFilterOperatorsRefused(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		s := storetest.Open(t, d)
		tenantID, m, _ := filterOpRecords(t, s)
		long := make([]any, models.MaxFilterInValues+1)
		for i := range long {
			long[i] = i
		}
		for _, c := range []struct {
			filter map[string]any
			want   models.FieldError
		}{
			{map[string]any{"gift": map[string]any{"gt": true}}, models.FieldError{Field: "filter.gift", Message: "boolean fields do not take gt; they take eq, ne, exists"}},
			{map[string]any{"qty": map[string]any{"prefix": "1"}}, models.FieldError{Field: "filter.qty", Message: "integer fields do not take prefix; they take eq, ne, gt, gte, lt, lte, in, exists"}},
			{map[string]any{"status": map[string]any{"lt": "paid"}}, models.FieldError{Field: "filter.status", Message: "status fields do not take lt; they take eq, ne, in, prefix, exists"}},
			{map[string]any{"qty": map[string]any{"like": 1}}, models.FieldError{Field: "filter.qty", Message: `unknown operator "like"; the operators are eq, ne, gt, gte, lt, lte, in, prefix, exists`}},
			{map[string]any{"qty": map[string]any{"gt": "1"}}, models.FieldError{Field: "filter.qty", Message: "gt: must be an integer"}},
			{map[string]any{"qty": map[string]any{"in": long}}, models.FieldError{Field: "filter.qty", Message: "in: must list at most 100 values, got 101"}},
			{map[string]any{"qty": map[string]any{"in": 1}}, models.FieldError{Field: "filter.qty", Message: "in: must be a non-empty array of values"}},
			{map[string]any{"status": map[string]any{"in": []any{"paid", "lost"}}}, models.FieldError{Field: "filter.status", Message: "in: value 2 must be one of the states [new paid shipped]"}},
			{map[string]any{"due": map[string]any{"exists": "yes"}}, models.FieldError{Field: "filter.due", Message: "exists: must be true or false"}},
			{map[string]any{"title": map[string]any{"prefix": 1}}, models.FieldError{Field: "filter.title", Message: "prefix: must be a string"}},
			{map[string]any{"title": map[string]any{}}, models.FieldError{Field: "filter.title", Message: "must be a value or an object of operator → value, not {}"}},
		} {
			_, err := filteredEndpoint(t, s, tenantID, []string{m.ID}, c.filter)
			if diff := cmp.Diff([]models.FieldError{c.want}, fieldErrors(t, err)); diff != "" {
				t.Errorf("%v: errors (-want +got):\n%s", c.filter, diff)
			}
		}

		// 20 conditions on two fields: 10 operators each would pass; one more fails.
		many := map[string]any{}
		for _, f := range []string{"qty", "price"} {
			ops := map[string]any{}
			for _, op := range []string{"eq", "ne", "gt", "gte", "lt", "lte", "in", "exists"} {
				ops[op] = 1
			}
			ops["in"], ops["exists"] = []any{1}, true
			many[f] = ops
		}
		many["title"] = map[string]any{"eq": "a", "ne": "b", "gt": "c", "gte": "d", "lt": "e"}
		_, err := filteredEndpoint(t, s, tenantID, []string{m.ID}, many)
		want := []models.FieldError{{Field: "filter", Message: "at most 20 conditions (each operator counts as one), got 21"}}
		if diff := cmp.Diff(want, fieldErrors(t, err)); diff != "" {
			t.Errorf("21 conditions (-want +got):\n%s", diff)
		}
		delete(many["title"].(map[string]any), "lt")
		if _, err := filteredEndpoint(t, s, tenantID, []string{m.ID}, many); err != nil {
			t.Errorf("20 conditions: %v", err)
		}
	})
}
