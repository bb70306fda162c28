package eventschema

import (
	"github.com/recordhub/recordhub/models"
)

// Dialect is the JSON Schema draft of the documents.
const Dialect = "https://json-schema.org/draft/2020-12/schema"

// ID is the $id of module moduleID's document: the same wherever it is
// fetched from, as module ids are unique.
func ID(moduleID string) string {
	return "urn:recordhub:module:" + moduleID + ":event-schemas"
}

// eventType is a $defs entry: an event type and the title generators name
// its type after.
type eventType struct {
	name, title string
}

// Types returns the event types whose bodies m's document describes, in
// the order of its oneOf: status_change only when m has a status field
// (the store sends one only for a status field), and endpoint_disabled,
// which belongs to no module but reaches an endpoint subscribed to it.
func Types(m *models.Module) []string {
	var out []string
	for _, t := range types(m) {
		out = append(out, t.name)
	}
	return out
}

func types(m *models.Module) []eventType {
	out := []eventType{{models.EventRecordCreated, "RecordCreated"}, {models.EventRecordUpdated, "RecordUpdated"}}
	if len(statusFields(m)) > 0 {
		out = append(out, eventType{models.EventStatusChange, "StatusChange"})
	}
	return append(out,
		eventType{models.EventCustomDataUpdated, "CustomDataUpdated"},
		eventType{models.EventRecordDeleted, "RecordDeleted"},
		eventType{models.EventRecordSnapshot, "RecordSnapshot"},
		eventType{models.EventEndpointDisabled, "EndpointDisabled"})
}

func statusFields(m *models.Module) []models.Field {
	var out []models.Field
	for _, f := range m.Fields {
		if f.Type == models.TypeStatus {
			out = append(out, f)
		}
	}
	return out
}

// For returns the document of m's event bodies: one schema per event type
// in $defs, named by the type (#/$defs/record_created, …), and the root
// one of them, told apart by "event". Every object but record.fields (see
// the package comment) and custom_data has exactly the members listed.
func For(m *models.Module) Object {
	defs := Object{}
	var oneOf []Object
	for _, t := range types(m) {
		defs = append(defs, Member{Key: t.name, Value: event(m, t)})
		oneOf = append(oneOf, obj("$ref", "#/$defs/"+t.name))
	}
	defs = append(defs,
		Member{Key: "record", Value: record(m)},
		Member{Key: "record_fields", Value: fieldsSchema(m)})
	return obj(
		"$schema", Dialect,
		"$id", ID(m.ID),
		"title", "WebhookEvent",
		"description", "The body of a webhook event of module "+m.Slug+" ("+m.ID+"), typed from its fields: one of $defs, told apart by event.",
		"oneOf", oneOf,
		"$defs", defs,
	)
}

// event is the schema of the body of event type t.
func event(m *models.Module, t eventType) Object {
	props := obj(
		"id", obj("type", "string", "pattern", "^"+models.PrefixEvent, "description", "The event id, also sent as webhook-id and X-Webhook-Id."),
		"event", obj("const", t.name),
		"occurred_at", obj("type", "string", "format", "date-time"),
		"tenant_id", obj("const", m.TenantID),
	)
	required := []string{"id", "event", "occurred_at", "tenant_id"}
	if t.name == models.EventEndpointDisabled {
		props = append(props,
			Member{Key: "endpoint", Value: obj("type", "object", "required", []string{"id", "url"},
				"properties", obj("id", obj("type", "string", "pattern", "^"+models.PrefixEndpoint), "url", obj("type", "string")),
				"additionalProperties", false)},
			Member{Key: "reason", Value: obj("enum", []string{models.DisabledGone, models.DisabledFailing, models.DisabledManual})})
		return obj("title", t.title, "type", "object",
			"description", "Another endpoint of the tenant was disabled; it belongs to no module.",
			"required", append(required, "endpoint", "reason"),
			"properties", props, "additionalProperties", false)
	}
	props = append(props,
		Member{Key: "module", Value: obj("type", "object", "required", []string{"id", "slug"},
			"properties", obj("id", obj("const", m.ID), "slug", obj("type", "string", "description", "The slug when the event was written.")),
			"additionalProperties", false)},
		Member{Key: "record", Value: obj("$ref", "#/$defs/record")},
		Member{Key: "changes", Value: changes(m, t.name)})
	required = append(required, "module", "record", "changes")
	switch t.name {
	case models.EventStatusChange:
		props = append(props, Member{Key: "status", Value: statusMove(m)})
		required = append(required, "status")
	case models.EventRecordSnapshot:
		props = append(props, Member{Key: "resync", Value: obj("type", "object", "required", []string{"id", "endpoint_id"},
			"properties", obj("id", obj("type", "string", "pattern", "^"+models.PrefixResync),
				"endpoint_id", obj("type", "string", "pattern", "^"+models.PrefixEndpoint)),
			"additionalProperties", false)})
		required = append(required, "resync")
	}
	return obj("title", t.title, "type", "object", "description", about[t.name],
		"required", required, "properties", props, "additionalProperties", false)
}

var about = map[string]string{
	models.EventRecordCreated:     "A record was created; record as created.",
	models.EventRecordUpdated:     "Fields of a record changed; changes.fields holds each, from and to.",
	models.EventStatusChange:      "A status field moved; changes.fields holds that field alone.",
	models.EventCustomDataUpdated: "A record's custom_data changed; changes.custom_data holds it before and after.",
	models.EventRecordDeleted:     "A record was deleted; record as it last was.",
	models.EventRecordSnapshot:    "A record's current state, sent by a resync of the endpoint.",
}

// changes is the schema of the changes member of event type typ.
func changes(m *models.Module, typ string) Object {
	switch typ {
	case models.EventRecordUpdated:
		props := make(Object, 0, len(m.Fields))
		for _, f := range m.Fields {
			props = append(props, Member{Key: f.Name, Value: change(Value(f))})
		}
		return obj("type", "object", "required", []string{"fields"},
			"properties", obj("fields", obj("type", "object", "minProperties", 1, "properties", props, "additionalProperties", true)),
			"additionalProperties", false)
	case models.EventStatusChange:
		props := Object{}
		for _, f := range statusFields(m) {
			props = append(props, Member{Key: f.Name, Value: change(Value(f))})
		}
		return obj("type", "object", "required", []string{"fields"},
			"properties", obj("fields", obj("type", "object", "minProperties", 1, "maxProperties", 1, "properties", props, "additionalProperties", false)),
			"additionalProperties", false)
	case models.EventCustomDataUpdated:
		return obj("type", "object", "required", []string{"custom_data"},
			"properties", obj("custom_data", obj("type", "object", "required", []string{"from", "to"},
				"properties", obj("from", obj("type", "object"), "to", obj("type", "object")),
				"additionalProperties", false)),
			"additionalProperties", false)
	}
	return obj("type", "object", "additionalProperties", false, "description", "Always {}.")
}

// statusMove is the schema of a status_change's status member: the field
// that moved, and its states before and after (null for none).
func statusMove(m *models.Module) Object {
	var moves []Object
	for _, f := range statusFields(m) {
		states := Value(f)
		moves = append(moves, obj("type", "object", "required", []string{"field", "from", "to"},
			"properties", obj("field", obj("const", f.Name), "from", nullable(states), "to", nullable(states)),
			"additionalProperties", false))
	}
	if len(moves) == 1 {
		return moves[0]
	}
	return obj("oneOf", moves)
}

// record is the schema of a body's record, as the API answers it.
func record(m *models.Module) Object {
	return obj("title", "EventRecord", "type", "object",
		"required", []string{"id", "module_id", "fields", "custom_data", "version", "created_at", "updated_at"},
		"properties", obj(
			"id", obj("type", "string", "pattern", "^"+models.PrefixRecord),
			"module_id", obj("const", m.ID),
			"fields", obj("$ref", "#/$defs/record_fields"),
			"custom_data", obj("type", "object", "description", "Free-form JSON the module does not type."),
			"version", obj("type", "integer", "minimum", 1),
			"created_at", obj("type", "string", "format", "date-time"),
			"updated_at", obj("type", "string", "format", "date-time"),
		),
		"additionalProperties", false)
}
