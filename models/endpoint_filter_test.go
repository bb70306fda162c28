package models_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// filterModule creates a tenant and a module with a field of each type
// a filter may name (and a json one, which it may not).
func filterModule(t *testing.T, s *models.Store, slug string, tenantID string) (string, *models.Module) {
	t.Helper()
	ctx := t.Context()
	if tenantID == "" {
		tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
		if err != nil {
			t.Fatal(err)
		}
		tenantID = tenant.ID
	}
	name := "Orders"
	fields := []models.Field{
		{Name: "title", Type: models.TypeString},
		{Name: "qty", Type: models.TypeInteger},
		{Name: "price", Type: models.TypeNumber},
		{Name: "gift", Type: models.TypeBoolean},
		{Name: "due", Type: models.TypeDatetime},
		{Name: "color", Type: models.TypeEnum, Options: []string{"red", "blue"}},
		{Name: "status", Type: models.TypeStatus, States: []string{"new", "paid", "shipped"}, Initial: "new"},
		{Name: "meta", Type: models.TypeJSON},
	}
	m, err := s.CreateModule(ctx, tenantID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	return tenantID, m
}

// fieldErrors returns the details of a validation error, or fails.
func fieldErrors(t *testing.T, err error) []models.FieldError {
	t.Helper()
	var e *models.Error
	if !errors.As(err, &e) || e.Kind != models.KindValidation {
		t.Fatalf("error %v, want a validation error", err)
	}
	return e.Details
}

// TestEndpointFilterValidation: a filter is checked against every module
// the endpoint names, naming the condition's field: unknown fields, json
// fields, values the field could not hold and unknown operators are refused; a
// filter without module_ids is refused; a valid one is stored in the
// list's filter form, numbers as numbers.
func TestEndpointFilterValidation(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			s := storetest.Open(t, d)
			tenantID, m := filterModule(t, s, "orders", "")
			_, other := filterModule(t, s, "returns", tenantID)

			refused := []struct {
				name    string
				modules []string
				filter  map[string]any
				want    []models.FieldError
			}{
				{"no modules", nil, map[string]any{"title": "a"},
					[]models.FieldError{{Field: "filter", Message: "a filter needs module_ids: its conditions are on the fields of those modules"}}},
				{"unknown field", []string{m.ID}, map[string]any{"nope": "a"},
					[]models.FieldError{{Field: "filter.nope", Message: `unknown field of module "orders"`}}},
				{"json field", []string{m.ID}, map[string]any{"meta": "a"},
					[]models.FieldError{{Field: "filter.meta", Message: "json fields cannot be filtered"}}},
				{"string for integer", []string{m.ID}, map[string]any{"qty": "7"},
					[]models.FieldError{{Field: "filter.qty", Message: "must be an integer"}}},
				{"fraction for integer", []string{m.ID}, map[string]any{"qty": json.Number("1.5")},
					[]models.FieldError{{Field: "filter.qty", Message: "must be an integer"}}},
				{"number for string", []string{m.ID}, map[string]any{"title": json.Number("5")},
					[]models.FieldError{{Field: "filter.title", Message: "must be a string"}}},
				{"string for boolean", []string{m.ID}, map[string]any{"gift": "true"},
					[]models.FieldError{{Field: "filter.gift", Message: "must be a boolean"}}},
				{"not a state", []string{m.ID}, map[string]any{"status": "lost"},
					[]models.FieldError{{Field: "filter.status", Message: "must be one of the states [new paid shipped]"}}},
				{"not a time", []string{m.ID}, map[string]any{"due": "tomorrow"},
					[]models.FieldError{{Field: "filter.due", Message: "must be an RFC 3339 date-time string"}}},
				{"null", []string{m.ID}, map[string]any{"title": nil},
					[]models.FieldError{{Field: "filter.title", Message: "must be a value the field could hold, not null"}}},
				{"operator", []string{m.ID}, map[string]any{"status": map[string]any{"$in": []any{"paid"}}},
					[]models.FieldError{{Field: "filter.status", Message: `unknown operator "$in"; the operators are eq, ne, gt, gte, lt, lte, in, prefix, exists`}}},
				{"two errors", []string{m.ID}, map[string]any{"title": true, "zz": "a"},
					[]models.FieldError{{Field: "filter.title", Message: "must be a string"}, {Field: "filter.zz", Message: `unknown field of module "orders"`}}},
			}
			for _, c := range refused {
				_, err := filteredEndpoint(t, s, tenantID, c.modules, c.filter)
				if diff := cmp.Diff(c.want, fieldErrors(t, err)); diff != "" {
					t.Errorf("%s: errors (-want +got):\n%s", c.name, diff)
				}
			}

			// Several modules: valid for each, else the one it fails names itself.
			name := "Returns"
			fields := append([]models.Field(nil), other.Fields...)
			fields[1].Type = models.TypeString // qty is a string there
			if _, err := s.UpdateModule(t.Context(), tenantID, other.ID, models.ModuleInput{Name: &name, Fields: &fields}); err != nil {
				t.Fatal(err)
			}
			_, err := filteredEndpoint(t, s, tenantID, []string{m.ID, other.ID}, map[string]any{"qty": json.Number("7")})
			got := fieldErrors(t, err)
			want := []models.FieldError{{Field: "filter.qty", Message: `must be a string (module "returns")`}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("two modules: errors (-want +got):\n%s", diff)
			}

			ep, err := filteredEndpoint(t, s, tenantID, []string{m.ID, other.ID}, map[string]any{
				"status": "shipped", "gift": true, "price": json.Number("2.50"), "due": "2026-01-02T03:04:05Z",
			})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := s.GetEndpoint(t.Context(), tenantID, ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantFilter := models.EndpointFilter{"status": "shipped", "gift": true, "price": json.Number("2.50"), "due": "2026-01-02T03:04:05Z"}
			if diff := cmp.Diff(wantFilter, stored.Filter); diff != "" {
				t.Errorf("stored filter (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEndpointFilterUpdate: PATCH replaces the filter, {} removes it;
// module_ids and the filter are checked together; a change that sets
// neither does not check a filter that a module's change made invalid,
// so the endpoint can still be switched off.
func TestEndpointFilterUpdate(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := storetest.Open(t, d)
			tenantID, m := filterModule(t, s, "orders", "")
			ep, err := filteredEndpoint(t, s, tenantID, []string{m.ID}, map[string]any{"status": "paid"})
			if err != nil {
				t.Fatal(err)
			}
			patch := func(in models.EndpointInput) (*models.WebhookEndpoint, error) {
				return s.UpdateEndpoint(ctx, tenantID, ep.ID, in, allowURL)
			}
			f := map[string]any{"status": "shipped", "qty": json.Number("3")}
			got, err := patch(models.EndpointInput{Filter: &f})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(models.EndpointFilter{"status": "shipped", "qty": json.Number("3")}, got.Filter); diff != "" {
				t.Errorf("patched filter (-want +got):\n%s", diff)
			}

			none := []string{}
			_, err = patch(models.EndpointInput{ModuleIDs: &none})
			if diff := cmp.Diff([]models.FieldError{{Field: "filter", Message: "a filter needs module_ids: its conditions are on the fields of those modules"}}, fieldErrors(t, err)); diff != "" {
				t.Errorf("module_ids emptied under a filter (-want +got):\n%s", diff)
			}

			// The module loses the field the filter names.
			name := "Orders"
			fields := []models.Field{{Name: "title", Type: models.TypeString}}
			if _, err := s.UpdateModule(ctx, tenantID, m.ID, models.ModuleInput{Name: &name, Fields: &fields}); err != nil {
				t.Fatal(err)
			}
			off := false
			if got, err = patch(models.EndpointInput{Enabled: &off}); err != nil {
				t.Fatalf("disable under a stale filter: %v", err)
			}
			if got.Enabled {
				t.Error("endpoint still enabled")
			}
			empty := map[string]any{}
			if got, err = patch(models.EndpointInput{Filter: &empty}); err != nil {
				t.Fatal(err)
			}
			if len(got.Filter) != 0 {
				t.Errorf("filter %v after {}, want none", got.Filter)
			}
			if got, err = patch(models.EndpointInput{ModuleIDs: &none}); err != nil || len(got.ModuleIDs) != 0 {
				t.Errorf("module_ids emptied without a filter: %v, %v", got, err)
			}
		})
	}
}

// TestEndpointFilterMatches: conditions compare as the list's filters do.
func TestEndpointFilterMatches(t *testing.T) {
	record := map[string]any{
		"title": "a", "qty": json.Number("2"), "price": json.Number("2.5"), "gift": true, "zero": json.Number("0"),
		"big": json.Number("9223372036854775807"),
	}
	cases := []struct {
		filter models.EndpointFilter
		want   bool
	}{
		{models.EndpointFilter{}, true},
		{models.EndpointFilter{"title": "a"}, true},
		{models.EndpointFilter{"title": "A"}, false},
		{models.EndpointFilter{"qty": json.Number("2")}, true},
		{models.EndpointFilter{"qty": json.Number("2.0")}, true},
		{models.EndpointFilter{"qty": json.Number("20e-1")}, true},
		{models.EndpointFilter{"qty": "2"}, false},
		{models.EndpointFilter{"price": json.Number("2.50")}, true},
		{models.EndpointFilter{"gift": true}, true},
		{models.EndpointFilter{"gift": false}, false},
		{models.EndpointFilter{"zero": false}, false},
		{models.EndpointFilter{"big": json.Number("9223372036854775806")}, false},
		{models.EndpointFilter{"missing": "a"}, false},
		{models.EndpointFilter{"title": "a", "gift": true}, true},
		{models.EndpointFilter{"title": "a", "gift": false}, false},
	}
	for _, c := range cases {
		if got := c.filter.Matches(record); got != c.want {
			t.Errorf("%v matches %v, want %v", c.filter, got, c.want)
		}
	}
}
