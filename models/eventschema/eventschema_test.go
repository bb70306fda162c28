package eventschema_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/eventschema"
	"github.com/recordhub/recordhub/models/storetest"
)

// everyField has a field of every type, two status fields and a required
// field.
var everyField = []models.Field{
	{Name: "title", Type: models.TypeString, Required: true},
	{Name: "notes", Type: models.TypeText},
	{Name: "count", Type: models.TypeInteger},
	{Name: "price", Type: models.TypeNumber},
	{Name: "done", Type: models.TypeBoolean},
	{Name: "due", Type: models.TypeDatetime},
	{Name: "email", Type: models.TypeEmail},
	{Name: "site", Type: models.TypeURL},
	{Name: "size", Type: models.TypeEnum, Options: []string{"s", "m"}},
	{Name: "stage", Type: models.TypeStatus, States: []string{"new", "paid", "shipped"}, Initial: "new"},
	{Name: "review", Type: models.TypeStatus, States: []string{"open", "closed"}},
	{Name: "extra", Type: models.TypeJSON},
}

// eventBodies writes, through the store, an event of every type of a module
// with everyField, and returns the module and the bodies as the outbox
// holds them (the bytes every delivery sends), with a record_snapshot
// built as a resync builds it.
func eventBodies(t *testing.T, d models.Dialect) (*models.Module, [][]byte) {
	t.Helper()
	ctx := context.Background()
	s := storetest.Open(t, d)
	ten, _, _, err := s.CreateTenant(ctx, "schemas", 1000)
	if err != nil {
		t.Fatal(err)
	}
	slug, name, fields := "orders", "Orders", everyField
	m, err := s.CreateModule(ctx, ten.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRecord(ctx, m, map[string]any{
		"title": "Desk", "notes": "oak", "count": json.Number("3"), "price": json.Number("120.5"), "done": false,
		"due": "2030-01-02T03:04:05Z", "email": "a@example.com", "site": "https://example.com/desk", "size": "s",
		"extra": map[string]any{"legs": json.Number("4")},
	}, map[string]any{"source": "shop"})
	if err != nil {
		t.Fatal(err)
	}
	// Fields and both status fields at once (one moving from no state),
	// then a status field removed, then custom_data.
	patches := []models.RecordPatch{
		{Fields: map[string]any{"title": "Standing desk", "count": nil, "stage": "paid", "review": "open", "extra": []any{"a", json.Number("1")}}},
		{Fields: map[string]any{"review": nil, "size": "m"}},
		{CustomData: map[string]any{"batch": json.Number("7")}},
	}
	for _, p := range patches {
		if r, _, err = s.UpdateRecord(ctx, m, r.ID, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	rs := &models.WebhookResync{BulkJob: models.BulkJob{ID: models.NewID(models.PrefixResync), TenantID: ten.ID, EndpointID: models.NewID(models.PrefixEndpoint), StartedAt: time.Now()}}
	snap, err := models.SnapshotEvent(rs, &models.ResyncCandidate{Record: *r, Module: *m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteRecord(ctx, m, r.ID); err != nil {
		t.Fatal(err)
	}
	url, events := "https://hooks.example.com/x", []string{models.EventRecordCreated}
	ep, _, err := s.CreateEndpoint(ctx, ten.ID, models.EndpointInput{URL: &url, Events: &events}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DisableEndpoint(ctx, ten.ID, ep.ID); err != nil {
		t.Fatal(err)
	}
	pending, err := s.PendingEvents(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	bodies := [][]byte{[]byte(snap.Payload)}
	for _, e := range pending {
		bodies = append(bodies, []byte(e.Payload))
	}
	return m, bodies
}

// Every body the store writes, of every event type, validates against the
// module's document, at its root and at its own type's schema, formats
// asserted.
func TestForValidatesStoredBodies(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			m, bodies := eventBodies(t, d)
			id := eventschema.ID(m.ID)
			v := newValidator(t, id, eventschema.For(m), true)
			seen := map[string]int{}
			for _, b := range bodies {
				var head struct {
					Event string `json:"event"`
				}
				if err := json.Unmarshal(b, &head); err != nil {
					t.Fatal(err)
				}
				seen[head.Event]++
				if err := v.check(id, b); err != nil {
					t.Errorf("%s: %v\nbody: %s", head.Event, err, b)
				}
				if err := v.check(id+"#/$defs/"+head.Event, b); err != nil {
					t.Errorf("%s against its own schema: %v", head.Event, err)
				}
			}
			if got, want := slices.Sorted(maps.Keys(seen)), slices.Sorted(slices.Values(eventschema.Types(m))); !slices.Equal(got, want) {
				t.Errorf("bodies of types %v, want one of each type the document has, %v", got, want)
			}
			if seen[models.EventStatusChange] != 3 {
				t.Errorf("%d status_change bodies, want 3 (two moves at once, one removal)", seen[models.EventStatusChange])
			}
		})
	}
}

// A body that breaks the module's types fails validation: each mutation of
// a valid body is caught.
func TestForRefusesBrokenBodies(t *testing.T) {
	m, bodies := eventBodies(t, models.SQLite)
	id := eventschema.ID(m.ID)
	v := newValidator(t, id, eventschema.For(m), true)
	byType := map[string][]byte{}
	for _, b := range bodies {
		var head struct {
			Event string `json:"event"`
		}
		json.Unmarshal(b, &head)
		byType[head.Event] = b
	}
	cases := []struct {
		name, event string
		mutate      func(body map[string]any)
	}{
		{"a field of the wrong type", models.EventRecordCreated, func(b map[string]any) { fieldsOf(b)["count"] = "three" }},
		{"a required field missing", models.EventRecordCreated, func(b map[string]any) { delete(fieldsOf(b), "title") }},
		{"a value outside the enum", models.EventRecordUpdated, func(b map[string]any) { fieldsOf(b)["size"] = "xl" }},
		{"a state outside the status field's", models.EventRecordDeleted, func(b map[string]any) { fieldsOf(b)["stage"] = "lost" }},
		{"a fraction in an integer field", models.EventRecordSnapshot, func(b map[string]any) { fieldsOf(b)["count"] = 1.5 }},
		{"a null field", models.EventRecordCreated, func(b map[string]any) { fieldsOf(b)["extra"] = nil }},
		{"a url that is not http", models.EventRecordCreated, func(b map[string]any) { fieldsOf(b)["site"] = "ftp://example.com" }},
		{"a date-time that is not one", models.EventRecordCreated, func(b map[string]any) { fieldsOf(b)["due"] = "soon" }},
		{"a change to a value of the wrong type", models.EventRecordUpdated, func(b map[string]any) {
			b["changes"].(map[string]any)["fields"].(map[string]any)["title"] = map[string]any{"from": "a", "to": 5}
		}},
		{"a status move of a field that is not a status field", models.EventStatusChange, func(b map[string]any) {
			b["status"].(map[string]any)["field"] = "title"
		}},
		{"a status move to an unknown state", models.EventStatusChange, func(b map[string]any) {
			b["status"].(map[string]any)["to"] = "lost"
		}},
		{"another module's record", models.EventRecordCreated, func(b map[string]any) {
			b["record"].(map[string]any)["module_id"] = "mod_other"
		}},
		{"a key the body never has", models.EventCustomDataUpdated, func(b map[string]any) { b["surprise"] = true }},
		{"changes on a creation", models.EventRecordCreated, func(b map[string]any) { b["changes"] = map[string]any{"fields": map[string]any{}} }},
		{"an unknown event type", models.EventRecordCreated, func(b map[string]any) { b["event"] = "record_exploded" }},
		{"an unknown disable reason", models.EventEndpointDisabled, func(b map[string]any) { b["reason"] = "bored" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, ok := byType[c.event]
			if !ok {
				t.Fatalf("no %s body", c.event)
			}
			var body map[string]any
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatal(err)
			}
			c.mutate(body)
			if err := v.check(id, marshal(t, body)); err == nil {
				t.Errorf("the broken %s body validates: %s", c.event, marshal(t, body))
			}
		})
	}
}

func fieldsOf(body map[string]any) map[string]any {
	return body["record"].(map[string]any)["fields"].(map[string]any)
}

// status_change is in the document only for a module with a status field,
// as the store sends one only for such a field.
func TestTypes(t *testing.T) {
	plain := &models.Module{ID: "mod_a", Fields: models.FieldList{{Name: "title", Type: models.TypeString}}}
	if slices.Contains(eventschema.Types(plain), models.EventStatusChange) {
		t.Errorf("types %v of a module without a status field include status_change", eventschema.Types(plain))
	}
	withStatus := &models.Module{ID: "mod_b", Fields: models.FieldList{{Name: "stage", Type: models.TypeStatus, States: []string{"a"}}}}
	want := []string{models.EventRecordCreated, models.EventRecordUpdated, models.EventStatusChange, models.EventCustomDataUpdated,
		models.EventRecordDeleted, models.EventRecordSnapshot, models.EventEndpointDisabled}
	if got := eventschema.Types(withStatus); !slices.Equal(got, want) {
		t.Errorf("types %v, want %v", got, want)
	}
	for _, typ := range models.EventTypes {
		if !slices.Contains(want, typ) {
			t.Errorf("event type %s has no schema", typ)
		}
	}
}
