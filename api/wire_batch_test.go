package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// awkward are strings that encoding/json writes with escapes of every kind
// it has: the ones a record cannot store (U+0000) go in records made here
// rather than stored.
var awkward = []string{
	"", "plain", `say "hi"`, `back\slash`, "tab\there", "nl\ncr\r", "\b\f\v\x01\x1f\x7f",
	"<script>&amp;</script>", "line\u2028para\u2029end", "héllo wörld ✓ 日本 🎉", "bad \xff utf-8 \xc3",
}

// TestAppendBatchItems: a batch's answers, and a record route's answer
// body, are appended byte for byte as c.JSON (json.Marshal) writes them:
// creates, updates and deletes of records whose fields and custom data
// hold awkward strings, keys and numbers, empty and absent objects, and
// records made here with what a store does not hold.
func TestAppendBatchItems(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			store := storetest.NewDB(t, d).Open(t, models.Options{})
			tenant, _, _, err := store.CreateTenant(ctx, "wire", 1000)
			if err != nil {
				t.Fatal(err)
			}
			slug, name := "things", "Things <&>"
			fields := []models.Field{{Name: "title", Type: models.TypeString}, {Name: "qty", Type: models.TypeInteger}, {Name: "price", Type: models.TypeNumber}}
			m, err := store.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
			if err != nil {
				t.Fatal(err)
			}
			values := []models.RecordValues{{}, {Fields: map[string]any{}, CustomData: map[string]any{}}}
			for i, s := range awkward {
				values = append(values, models.RecordValues{
					Fields:     map[string]any{"title": s, "qty": json.Number("12"), "price": json.Number("1.50e3")},
					CustomData: map[string]any{"k" + s: s, "n": json.Number("-0.000"), "list": []any{s, true, nil, 3.25, map[string]any{s: i}}},
				})
			}
			recs, err := store.CreateRecords(ctx, m, values)
			if err != nil {
				t.Fatal(err)
			}
			var answers []recordAnswer
			for _, r := range recs {
				answers = append(answers, createdAnswer(m, r))
			}
			one, err := store.CreateRecord(ctx, m, map[string]any{"title": "<one>"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, createdAnswer(m, one))
			updated, _, err := store.UpdateRecord(ctx, m, recs[2].ID, models.RecordPatch{Fields: map[string]any{"title": "a&b\u2028"}, CustomData: map[string]any{"<x>": nil}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, recordAnswer{status: http.StatusOK, etag: etag(updated.Version), body: recordOut(updated)})
			deleted, err := store.DeleteRecord(ctx, m, recs[3].ID)
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, recordAnswer{status: http.StatusOK, body: deletedJSON{ID: deleted.ID, Deleted: true}})

			zone := time.FixedZone("odd", -(9*3600 + 30*60))
			at := time.Date(2026, 2, 3, 4, 5, 6, 7, zone)
			for _, s := range append(awkward, "nul \x00 inside") {
				raw, err := json.Marshal(map[string]any{s: s, "n": json.Number("1e-7")})
				if err != nil {
					t.Fatal(err)
				}
				answers = append(answers,
					recordAnswer{status: http.StatusCreated, etag: s, location: s, body: recordOut(&models.Record{
						ID: s, ModuleID: s, Fields: models.JSONObject{s: []any{s}}, Version: 7, CreatedAt: at, UpdatedAt: at.UTC(),
					})},
					recordAnswer{status: http.StatusOK, location: "/api/" + s, body: recordJSON{
						ID: "rec_" + s, ModuleID: m.ID, Fields: raw, CustomData: json.RawMessage(`{}`), CreatedAt: at, UpdatedAt: at,
					}},
					recordAnswer{status: http.StatusOK, body: deletedJSON{ID: s}},
				)
			}

			items := make([]batchItemJSON, len(answers))
			for i, a := range answers {
				items[i] = batchItemOut(a)
				want, err := json.Marshal(a.body)
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := appendAnswerBody([]byte("x"), a.body); !ok || string(got) != "x"+string(want) {
					t.Errorf("answer %d: appendAnswerBody = %s, %v\nwant x%s", i, got, ok, want)
				}
			}
			want, err := json.Marshal(items)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendBatchItems([]byte("x"), answers)
			if !ok || string(got) != "x"+string(want) {
				t.Errorf("appendBatchItems = %v\n%s\nwant\n%s", ok, got, want)
			}
			sameAsJSON(t, answers)
		})
	}
}

// sameAsJSON checks that writeBatchAnswers answers answers as c.JSON
// answers their items: status, headers and body.
func sameAsJSON(t *testing.T, answers []recordAnswer) {
	t.Helper()
	items := make([]batchItemJSON, len(answers))
	for i, a := range answers {
		items[i] = batchItemOut(a)
	}
	want := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(want)
	c.JSON(http.StatusOK, items)
	got := httptest.NewRecorder()
	c, _ = gin.CreateTestContext(got)
	writeBatchAnswers(c, answers)
	if got.Code != want.Code || !maps.EqualFunc(got.Header(), want.Header(), slices.Equal) || got.Body.String() != want.Body.String() {
		t.Errorf("writeBatchAnswers answered %d %v\n%s\nc.JSON %d %v\n%s", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
	}
}

// TestAppendBatchItemsDeclines: an answer appendBatchItems cannot write as
// json.Marshal does is left to json.Marshal, with the buffer as it was.
func TestAppendBatchItemsDeclines(t *testing.T) {
	good := recordAnswer{status: http.StatusOK, body: deletedJSON{ID: "rec_1", Deleted: true}}
	for name, body := range map[string]any{
		"unknown body":     map[string]any{"id": "rec_1"},
		"year 10000":       recordJSON{ID: "rec_1", Fields: json.RawMessage(`{}`), CustomData: json.RawMessage(`{}`), CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"fields not JSON":  recordJSON{ID: "rec_1", Fields: json.RawMessage{}, CustomData: json.RawMessage(`{}`)},
		"unencodable data": recordJSON{ID: "rec_1", Fields: map[string]any{"f": func() {}}, CustomData: json.RawMessage(`{}`)},
	} {
		answers := []recordAnswer{good, {status: http.StatusOK, body: body}}
		got, ok := appendBatchItems([]byte("x"), answers)
		if ok || string(got) != "x" {
			t.Errorf("%s: appendBatchItems = %s, %v; want x, false", name, got, ok)
		}
		if _, err := json.Marshal(body); err == nil {
			sameAsJSON(t, answers)
		}
	}
}
