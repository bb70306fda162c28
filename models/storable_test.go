package models_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// Text from outside: invalid UTF-8, NUL, and characters of 2, 3 and 4
// bytes placed across a column's bound.
const (
	badText   = "ok\xff\xfe\x00end"
	cleanText = "ok\uFFFD\uFFFDend"
)

// overLong returns a text of n bytes of "a" followed by a 4-byte character
// straddling the bound n+2, and what is kept of it under that bound.
func overLong(n int) (text, kept string) {
	return strings.Repeat("a", n) + "😀tail", strings.Repeat("a", n)
}

// TestStoredTextFromOutside: every text column of the rows written from
// outside input (access logs, delivery attempts, inbound calls) takes
// invalid UTF-8, NUL and over-long text on both databases, and reads back
// as valid UTF-8, cut on a character boundary at the column's bound.
func TestStoredTextFromOutside(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		out := newOutboxTenant(t, s, "t")
		at := time.Now().UTC().Truncate(time.Millisecond)

		t.Run("access log", func(t *testing.T) {
			path, keptPath := overLong(models.MaxAccessLogPath - 2)
			ua, keptUA := overLong(models.MaxUserAgent - 2)
			logs := []models.AccessLog{
				{ID: models.NewID(models.PrefixAccessLog), TenantID: &out.id, Method: "GET", Path: "/api/" + badText, Route: "unmatched",
					Status: 404, IP: "127.0.0.1", UserAgent: badText, RequestID: "r1", CreatedAt: at},
				{ID: models.NewID(models.PrefixAccessLog), TenantID: &out.id, Method: "GET", Path: path, Route: "unmatched",
					Status: 404, IP: "127.0.0.1", UserAgent: ua, RequestID: "r2", CreatedAt: at.Add(time.Millisecond)},
			}
			if err := s.InsertAccessLogs(ctx, logs); err != nil {
				t.Fatalf("InsertAccessLogs: %v", err)
			}
			got, _, err := s.ListAccessLogs(ctx, out.id, models.AccessLogQuery{Page: models.Page{Limit: 10}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("%d access logs, want 2", len(got))
			}
			// Newest first.
			wantText(t, "long path", got[0].Path, keptPath)
			wantText(t, "long user agent", got[0].UserAgent, keptUA)
			wantText(t, "path", got[1].Path, "/api/"+cleanText)
			wantText(t, "user agent", got[1].UserAgent, cleanText)
		})

		t.Run("delivery", func(t *testing.T) {
			body, keptBody := overLong(models.MaxResponseBody - 2)
			msg, keptMsg := overLong(models.MaxErrorMessage - 1)
			status := 500
			row := &models.WebhookDelivery{
				TenantID: out.id, EventID: "evt_1", EventType: models.EventRecordCreated, EndpointID: "whe_1",
				WorkflowID: "wf", RunID: "run", Attempt: 1, RequestURL: "https://hooks.example.com/",
				RequestHeaders: models.Headers{"X-Sent": {badText}}, RequestBody: "{}",
				Error: models.DeliveryErrInFlight, ErrorMessage: "sending", StartedAt: at, FinishedAt: at,
			}
			if err := s.InsertAttempt(ctx, row); err != nil {
				t.Fatalf("InsertAttempt: %v", err)
			}
			row.ResponseStatus = &status
			row.ResponseHeaders = models.Headers{"X-Bad\x00": {badText}}
			row.ResponseBody, row.Error, row.ErrorMessage = body, models.DeliveryErrHTTPStatus, msg
			if err := s.FinishAttempt(ctx, row); err != nil {
				t.Fatalf("FinishAttempt: %v", err)
			}
			got, err := s.GetDelivery(ctx, out.id, row.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantText(t, "response body", got.ResponseBody, keptBody)
			wantText(t, "error message", got.ErrorMessage, keptMsg)
			if diff := cmp.Diff(models.Headers{"X-Sent": {cleanText}}, got.RequestHeaders); diff != "" {
				t.Errorf("request headers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(models.Headers{"X-Bad\uFFFD": {cleanText}}, got.ResponseHeaders); diff != "" {
				t.Errorf("response headers (-want +got):\n%s", diff)
			}

			one := &models.WebhookDelivery{
				TenantID: out.id, EventID: "evt_2", EventType: models.EventRecordCreated, EndpointID: "whe_1",
				WorkflowID: "wf2", RunID: "run", Attempt: 1, RequestURL: "https://hooks.example.com/", RequestBody: "{}",
				ResponseBody: badText, Error: models.DeliveryErrConnection, ErrorMessage: badText, RemoteIP: badText,
				StartedAt: at, FinishedAt: at,
			}
			if err := s.InsertDelivery(ctx, one); err != nil {
				t.Fatalf("InsertDelivery: %v", err)
			}
			got, err = s.GetDelivery(ctx, out.id, one.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantText(t, "response body", got.ResponseBody, cleanText)
			wantText(t, "error message", got.ErrorMessage, cleanText)
			wantText(t, "remote ip", got.RemoteIP, cleanText)
		})

		t.Run("inbound event", func(t *testing.T) {
			body, keptBody := overLong(models.MaxInboundBody - 2)
			id := "dlv\x00" + badText
			ev := &models.InboundEvent{
				ID: models.NewID(models.PrefixInboundEvent), TenantID: out.id, ModuleID: out.module.ID, WebhookID: "whi_1",
				RequestID: "r", Headers: models.Headers{"X-Bad": {badText}}, Body: body, BodySize: len(body), IP: "127.0.0.1",
				DeliveryID: &id, ReceivedAt: at,
			}
			ev.SetError(422, "mapping_failed", badText, []models.FieldError{{Field: "fields." + badText, Message: badText, Source: "$." + badText}})
			if err := s.RecordInboundEvent(ctx, ev); err != nil {
				t.Fatalf("RecordInboundEvent: %v", err)
			}
			got, err := s.GetInboundEvent(ctx, out.id, out.module.ID, ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			wantText(t, "body", got.Body, keptBody)
			wantText(t, "error message", got.ErrorMessage, cleanText)
			if got.DeliveryID == nil {
				t.Fatal("delivery id not stored")
			}
			wantText(t, "delivery id", *got.DeliveryID, "dlv\uFFFD"+cleanText)
			if diff := cmp.Diff(models.Headers{"X-Bad": {cleanText}}, got.Headers); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			wantDetails := models.FieldErrors{{Field: "fields." + cleanText, Message: cleanText, Source: "$." + cleanText}}
			if diff := cmp.Diff(wantDetails, got.ErrorDetails); diff != "" {
				t.Errorf("error details (-want +got):\n%s", diff)
			}
		})
	})
}
