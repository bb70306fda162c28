package models

import (
	"encoding/json"
	"testing"
	"time"
)

// TestAppendEventBody: an event's payload is appended byte for byte as
// json.Marshal writes its eventBody, for the bodies of every event type
// (recordEvents) with awkward strings, keys, numbers and times, the
// record's JSON or its objects, and a body json.Marshal refuses is left to
// it.
func TestAppendEventBody(t *testing.T) {
	awkward := []string{
		"", "plain", `say "hi"`, `back\slash`, "tab\there", "nl\ncr\r", "\b\f\v\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "line\u2028para\u2029end", "héllo wörld ✓ 日本 🎉", "bad \xff utf-8 \xc3",
	}
	zone := time.FixedZone("odd", 5*3600+45*60)
	created := time.Date(2026, 12, 1, 23, 0, 0, 123456000, time.UTC)
	var bodies []eventBody
	for i, s := range awkward {
		obj := map[string]any{s: s, "n": json.Number("1.50e-3"), "f": 0.1, "i": i, "nested": map[string]any{"<>": []any{nil, true, s}}}
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		rec := eventRecord{ID: "rec_" + s, ModuleID: "mod_" + s, Fields: raw, CustomData: json.RawMessage(`{}`), Version: int64(i + 1), CreatedAt: created, UpdatedAt: created.Add(time.Duration(i) * time.Nanosecond).In(zone)}
		objects := rec
		objects.Fields, objects.CustomData = obj, map[string]any{}
		base := eventBody{ID: "evt_" + s, OccurredAt: created.Format(time.RFC3339Nano), TenantID: "ten_" + s, Module: eventModule{ID: "mod_" + s, Slug: s}}
		for _, b := range []eventBody{
			{Event: EventRecordCreated, Record: rec, Changes: map[string]any{}},
			{Event: EventRecordDeleted, Record: objects, Changes: map[string]any{}},
			{Event: EventRecordUpdated, Record: objects, Changes: map[string]any{"fields": map[string]any{s: change{nil, s}, "n": change{json.Number("1"), 2.5}}}},
			{Event: EventStatusChange, Record: rec, Changes: map[string]any{"fields": map[string]any{"status": change{s, "done"}}}, Status: &StatusMovement{Field: "status", From: s, To: "done"}},
			{Event: EventCustomDataUpdated, Record: objects, Changes: map[string]any{"custom_data": change{map[string]any{}, obj}}},
			{Event: s, Record: eventRecord{Fields: map[string]any(nil), CustomData: JSONObject(nil)}},
		} {
			b.ID, b.OccurredAt, b.TenantID, b.Module = base.ID, base.OccurredAt, base.TenantID, base.Module
			bodies = append(bodies, b)
		}
	}
	for i, body := range bodies {
		want, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendEventBody([]byte("x"), &body)
		if !ok || string(got) != "x"+string(want) {
			t.Errorf("body %d: appendEventBody = %v\n%s\nwant\nx%s", i, ok, got, want)
		}
		if enc, err := encodeEventBody(&body); err != nil || enc != string(want) {
			t.Errorf("body %d: encodeEventBody = %s, %v; want %s", i, enc, err, want)
		}
	}

	for name, body := range map[string]eventBody{
		"year 10000":     {Record: eventRecord{Fields: json.RawMessage(`{}`), CustomData: json.RawMessage(`{}`), CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		"unencodable":    {Record: eventRecord{Fields: json.RawMessage(`{}`), CustomData: json.RawMessage(`{}`)}, Changes: map[string]any{"f": func() {}}},
		"empty raw JSON": {Record: eventRecord{Fields: json.RawMessage{}, CustomData: json.RawMessage(`{}`)}},
	} {
		if got, ok := appendEventBody([]byte("x"), &body); ok || string(got) != "x" {
			t.Errorf("%s: appendEventBody = %s, %v; want x, false", name, got, ok)
		}
		if _, err := encodeEventBody(&body); err == nil {
			t.Errorf("%s: encodeEventBody took a body json.Marshal refuses", name)
		}
	}
}
