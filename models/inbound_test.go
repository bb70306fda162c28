package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/mapping"
	"github.com/recordhub/recordhub/models/storetest"
)

// inboundFields are the fields of the module the inbound tests map into.
var inboundFields = []models.Field{
	{Name: "sku", Type: models.TypeString, Required: true},
	{Name: "qty", Type: models.TypeInteger},
	{Name: "status", Type: models.TypeStatus, States: []string{"new", "open", "closed"}, Initial: "new",
		Transitions: map[string][]string{"new": {"open"}, "open": {"closed"}}},
	{Name: "meta", Type: models.TypeJSON},
}

// inboundRules map a payload into inboundFields: a nested path, plain
// keys and a custom_data key.
var inboundRules = []mapping.Rule{
	{Source: "$.payload.item.sku", Field: "sku"},
	{Source: "$.payload.qty", Field: "qty"},
	{Source: "$.payload.state", Field: "status"},
	{Source: "$.payload.meta", Field: "meta"},
	{Source: "$.payload.ref", Field: "custom_data.external_id"},
}

// inboundEnv is a module with an inbound webhook, and the calls made to it.
type inboundEnv struct {
	s      *models.Store
	tenant string
	m      *models.Module
	w      *models.InboundWebhook
	token  string
	mu     sync.Mutex
	calls  int
	base   time.Time
}

// newInboundModule creates a module of the tenant with inboundFields.
func newInboundModule(t *testing.T, s *models.Store, tenant, slug string) *models.Module {
	t.Helper()
	fields := inboundFields
	m, err := s.CreateModule(context.Background(), tenant, models.ModuleInput{Slug: &slug, Name: ptr(slug), Fields: &fields})
	if err != nil {
		t.Fatalf("create module %s: %v", slug, err)
	}
	return m
}

// newInboundEnv creates a tenant, a module and its inbound webhook.
func newInboundEnv(t *testing.T, s *models.Store, in models.InboundInput) *inboundEnv {
	t.Helper()
	tenant, _ := newTenant(t, s)
	m := newInboundModule(t, s, tenant, "orders")
	w, token, _, err := s.ConfigureInbound(context.Background(), tenant, m.ID, in)
	if err != nil {
		t.Fatalf("configure inbound: %v", err)
	}
	return &inboundEnv{s: s, tenant: tenant, m: m, w: w, token: token, base: time.Now().UTC().Truncate(time.Second)}
}

// decodePayload decodes a body as the receiver does, numbers kept exact.
func decodePayload(t *testing.T, body string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

// send sends a decoded payload to the webhook as the receiver does; calls
// are received one second apart. It is safe for concurrent use.
func (e *inboundEnv) send(payload any, body string) (*models.Record, *models.InboundEvent, error) {
	e.mu.Lock()
	e.calls++
	at := e.base.Add(time.Duration(e.calls) * time.Second)
	e.mu.Unlock()
	ev := &models.InboundEvent{
		ID: models.NewID(models.PrefixInboundEvent), TenantID: e.w.TenantID, ModuleID: e.w.ModuleID, WebhookID: e.w.ID,
		RequestID: models.NewID(models.PrefixRequest), Body: body, BodySize: len(body), ReceivedAt: at,
	}
	rec, err := e.s.ApplyInbound(context.Background(), e.w, payload, ev)
	return rec, ev, err
}

// apply sends body to the webhook and, as the receiver does, keeps a
// refused call with its error.
func (e *inboundEnv) apply(t *testing.T, body string) (*models.Record, *models.InboundEvent, error) {
	t.Helper()
	rec, ev, err := e.send(decodePayload(t, body), body)
	var me *models.Error
	if errors.As(err, &me) {
		ev.SetError(422, string(me.Kind), me.Message, me.Details)
		if kerr := e.s.RecordInboundEvent(context.Background(), ev); kerr != nil {
			t.Fatalf("record inbound event: %v", kerr)
		}
	}
	return rec, ev, err
}

// eventRef is an outbox event as the tests compare it.
type eventRef struct{ Type, RecordID string }

// takeEvents returns the pending outbox events and marks them dispatched.
func takeEvents(t *testing.T, s *models.Store) []eventRef {
	t.Helper()
	ctx := context.Background()
	evs, err := s.PendingEvents(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []eventRef
	var ids []string
	for _, e := range evs {
		out = append(out, eventRef{e.Type, e.RecordID})
		ids = append(ids, e.ID)
	}
	if err := s.MarkDispatched(ctx, ids); err != nil {
		t.Fatal(err)
	}
	return out
}

// storedRecord returns a record's fields and custom data as read back from
// the database, decoded as plain JSON.
func storedRecord(t *testing.T, s *models.Store, tenant, moduleID, id string) (version int64, fields, custom map[string]any) {
	t.Helper()
	v, err := s.GetRecord(context.Background(), tenant, moduleID, id)
	if err != nil {
		t.Fatalf("get record %s: %v", id, err)
	}
	if err := json.Unmarshal(v.Fields, &fields); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(v.CustomData, &custom); err != nil {
		t.Fatal(err)
	}
	return v.Version, fields, custom
}

// mappingDetails returns the details of a mapping_failed error.
func mappingDetails(t *testing.T, err error) []models.FieldError {
	t.Helper()
	var e *models.Error
	if !errors.As(err, &e) || e.Kind != models.KindMappingFailed {
		t.Fatalf("error %v, want mapping_failed", err)
	}
	return e.Details
}

// ignoreMessage compares field errors without their wording.
var ignoreMessage = cmpopts.IgnoreFields(models.FieldError{}, "Message")

func TestConfigureInboundValidation(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		tenant, _ := newTenant(t, s)
		m := newInboundModule(t, s, tenant, "orders")
		skuOnly := inboundRules[:1]
		withBadKey := append(append([]mapping.Rule{}, inboundRules...), mapping.Rule{Source: "$.payload.y", Field: "custom_data.a b"})
		tests := []struct {
			name string
			in   models.InboundInput
			want []string
		}{
			{"no rules", models.InboundInput{}, []string{"mapping"}},
			{"source outside the payload", models.InboundInput{Mapping: []mapping.Rule{inboundRules[0], {Source: "$.other", Field: "qty"}}}, []string{"mapping[1].source"}},
			{"field not in the module", models.InboundInput{Mapping: []mapping.Rule{{Source: "$.payload.c", Field: "colour"}, inboundRules[0]}}, []string{"mapping[0].field"}},
			{"match field no rule writes", models.InboundInput{Mapping: skuOnly, MatchFields: []string{"qty"}}, []string{"match_fields[0]"}},
			{"custom match field no rule writes", models.InboundInput{Mapping: skuOnly, MatchFields: []string{"custom_data.nothing"}}, []string{"match_fields[0]"}},
			{"duplicate match field", models.InboundInput{Mapping: skuOnly, MatchFields: []string{"sku", "sku"}}, []string{"match_fields[1]"}},
			{"json match field", models.InboundInput{Mapping: inboundRules, MatchFields: []string{"meta"}}, []string{"match_fields[0]"}},
			{"bad custom match key", models.InboundInput{Mapping: withBadKey, MatchFields: []string{"sku", "custom_data.a b"}}, []string{"match_fields[1]"}},
			{"bad match name", models.InboundInput{Mapping: skuOnly, MatchFields: []string{"1sku"}}, []string{"match_fields[0]"}},
			{"secret too short", models.InboundInput{Mapping: skuOnly, Secret: ptr("short")}, []string{"secret"}},
			{"secret too long", models.InboundInput{Mapping: skuOnly, Secret: ptr(strings.Repeat("s", 513))}, []string{"secret"}},
			{"unknown signature scheme", models.InboundInput{Mapping: skuOnly, SignatureScheme: "md5"}, []string{"signature_scheme"}},
			{"several", models.InboundInput{
				Mapping: []mapping.Rule{{Source: "$.x", Field: "sku"}, {Source: "$.payload.c", Field: "colour"}},
				Secret:  ptr(""), MatchFields: []string{"sku", "sku"},
			}, []string{"mapping[0].source", "mapping[1].field", "match_fields[1]", "secret"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, _, _, err := s.ConfigureInbound(ctx, tenant, m.ID, tt.in)
				if diff := cmp.Diff(tt.want, errorFields(t, err), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
					t.Errorf("error fields (-want +got):\n%s", diff)
				}
			})
		}
		if _, err := s.GetInbound(ctx, tenant, m.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("GetInbound after refused configurations: %v, want not found", err)
		}
		other, _ := newTenant(t, s)
		if _, _, _, err := s.ConfigureInbound(ctx, other, m.ID, models.InboundInput{Mapping: skuOnly}); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("configure another tenant's module: %v, want not found", err)
		}
	})
}

func TestConfigureInboundReplaces(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		tenant, _ := newTenant(t, s)
		m := newInboundModule(t, s, tenant, "orders")
		const secret = "0123456789abcdef-secret"
		secretOf := func(t *testing.T) (string, bool) {
			t.Helper()
			w, err := s.GetInbound(ctx, tenant, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := s.InboundSecret(w)
			if err != nil {
				t.Fatal(err)
			}
			return got, ok
		}

		w, token, created, err := s.ConfigureInbound(ctx, tenant, m.ID, models.InboundInput{
			Secret: ptr(secret), SignatureScheme: "sha256", Mapping: inboundRules, MatchFields: []string{"sku"}, Enabled: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !created || token == "" {
			t.Fatalf("first configure: created %v, token %q; want created with a token", created, token)
		}
		if w.TokenHash != models.HashAPIKey(token) || strings.Contains(w.Token, token) || strings.Contains(*w.Secret, secret) {
			t.Errorf("token or secret stored in clear: %+v", w)
		}
		if got, err := s.InboundToken(w); err != nil || got != token {
			t.Errorf("InboundToken = %q, %v; want %q", got, err, token)
		}
		if got, ok := secretOf(t); !ok || got != secret {
			t.Errorf("secret = %q, %v; want %q", got, ok, secret)
		}

		w2, token2, created, err := s.ConfigureInbound(ctx, tenant, m.ID, models.InboundInput{Mapping: inboundRules[:2]})
		if err != nil {
			t.Fatal(err)
		}
		if created || token2 != token || w2.ID != w.ID {
			t.Errorf("second configure: created %v, token %q, id %s; want the same webhook %s and token %q", created, token2, w2.ID, w.ID, token)
		}
		got, err := s.GetInbound(ctx, tenant, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(inboundRules[:2], []mapping.Rule(got.Mapping)); diff != "" {
			t.Errorf("mapping not replaced (-want +got):\n%s", diff)
		}
		if len(got.MatchFields) != 0 || got.Enabled {
			t.Errorf("match fields %v, enabled %v; want replaced by none and false", got.MatchFields, got.Enabled)
		}
		if got, ok := secretOf(t); !ok || got != secret {
			t.Errorf("secret after a configure without one = %q, %v; want %q kept", got, ok, secret)
		}

		if _, _, _, err := s.ConfigureInbound(ctx, tenant, m.ID, models.InboundInput{Mapping: inboundRules, ClearSecret: true}); err != nil {
			t.Fatal(err)
		}
		if got, ok := secretOf(t); ok {
			t.Errorf("secret after ClearSecret = %q, want none", got)
		}
	})
}

func TestLookupInbound(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		in := models.InboundInput{Mapping: inboundRules, Enabled: true}
		configure := func(tenant string, m *models.Module) (*models.InboundWebhook, string) {
			t.Helper()
			w, token, _, err := s.ConfigureInbound(ctx, tenant, m.ID, in)
			if err != nil {
				t.Fatal(err)
			}
			return w, token
		}
		mine, _ := newTenant(t, s)
		theirs, _ := newTenant(t, s)
		orders := newInboundModule(t, s, mine, "orders")
		newInboundModule(t, s, mine, "notes") // no webhook
		myW, myToken := configure(mine, orders)
		// The other tenant has a module of the same slug, and one more.
		theirW, theirToken := configure(theirs, newInboundModule(t, s, theirs, "orders"))
		configure(theirs, newInboundModule(t, s, theirs, "items"))

		check := func(t *testing.T, slug, token, wantID string) {
			t.Helper()
			w, err := s.LookupInbound(ctx, slug, token)
			if wantID == "" {
				if !errors.Is(err, models.ErrNotFound) {
					t.Errorf("LookupInbound(%s, %.8s…) = %v, %v; want not found", slug, token, w, err)
				}
				return
			}
			if err != nil || w.ID != wantID {
				t.Errorf("LookupInbound(%s, %.8s…) = %v, %v; want %s", slug, token, w, err, wantID)
			}
		}
		for _, tt := range []struct {
			name, slug, token, want string
		}{
			{"mine", "orders", myToken, myW.ID},
			{"theirs, same slug", "orders", theirToken, theirW.ID},
			{"unknown slug", "nope", myToken, ""},
			{"unknown token", "orders", "not-a-token", ""},
			{"empty token", "orders", "", ""},
			{"my other module", "notes", myToken, ""},
			{"their other module", "items", myToken, ""},
		} {
			t.Run(tt.name, func(t *testing.T) { check(t, tt.slug, tt.token, tt.want) })
		}

		_, newToken, err := s.RotateInboundToken(ctx, mine, orders.ID)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "orders", myToken, "")
		check(t, "orders", newToken, myW.ID)
		if w, err := s.GetInbound(ctx, mine, orders.ID); err != nil {
			t.Fatal(err)
		} else if got, err := s.InboundToken(w); err != nil || got != newToken {
			t.Errorf("InboundToken after rotation = %q, %v; want the new token", got, err)
		}
		if _, _, err := s.RotateInboundToken(ctx, theirs, orders.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("rotate another tenant's webhook: %v, want not found", err)
		}

		if err := s.DeleteInbound(ctx, theirs, orders.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("delete another tenant's webhook: %v, want not found", err)
		}
		if err := s.DeleteInbound(ctx, mine, orders.ID); err != nil {
			t.Fatal(err)
		}
		check(t, "orders", newToken, "")
		check(t, "orders", theirToken, theirW.ID)
		if err := s.DeleteInbound(ctx, mine, orders.ID); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("second delete: %v, want not found", err)
		}
	})
}

func TestApplyInbound(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		e := newInboundEnv(t, s, models.InboundInput{Mapping: inboundRules, MatchFields: []string{"sku"}, Enabled: true})
		takeEvents(t, s)

		rec, ev, err := e.apply(t, `{"item": {"sku": "A1"}, "qty": 5, "meta": {"x": [1, 2]}, "ref": "ext-1"}`)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Action == nil || *ev.Action != models.InboundCreated || ev.RecordID == nil || *ev.RecordID != rec.ID || ev.Status != 202 {
			t.Errorf("event of the creation: %+v", ev)
		}
		id := rec.ID
		version, fields, custom := storedRecord(t, s, e.tenant, e.m.ID, id)
		if diff := cmp.Diff(map[string]any{"sku": "A1", "qty": 5.0, "status": "new", "meta": map[string]any{"x": []any{1.0, 2.0}}}, fields); diff != "" {
			t.Errorf("created fields (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]any{"external_id": "ext-1"}, custom); diff != "" {
			t.Errorf("created custom data (-want +got):\n%s", diff)
		}
		if version != 1 {
			t.Errorf("created at version %d, want 1", version)
		}
		if diff := cmp.Diff([]eventRef{{models.EventRecordCreated, id}}, takeEvents(t, s)); diff != "" {
			t.Errorf("events of the creation (-want +got):\n%s", diff)
		}

		rule := func(i int) *int { return &i }
		steps := []struct {
			name        string
			body        string
			wantDetails []models.FieldError // for a mapping_failed call
			wantVersion int64
			wantFields  map[string]any
			wantCustom  map[string]any
			wantEvents  []string
		}{
			{
				name: "update merges", body: `{"item": {"sku": "A1"}, "qty": 7, "state": "open"}`, wantVersion: 2,
				wantFields: map[string]any{"sku": "A1", "qty": 7.0, "status": "open", "meta": map[string]any{"x": []any{1.0, 2.0}}},
				wantCustom: map[string]any{"external_id": "ext-1"},
				wantEvents: []string{models.EventRecordUpdated, models.EventStatusChange},
			},
			{
				name: "same values change nothing", body: `{"item": {"sku": "A1"}, "qty": 7, "meta": {"x": [1, 2]}, "ref": "ext-1"}`, wantVersion: 2,
				wantFields: map[string]any{"sku": "A1", "qty": 7.0, "status": "open", "meta": map[string]any{"x": []any{1.0, 2.0}}},
				wantCustom: map[string]any{"external_id": "ext-1"},
			},
			{
				name: "null clears", body: `{"item": {"sku": "A1"}, "qty": null, "ref": null}`, wantVersion: 3,
				wantFields: map[string]any{"sku": "A1", "status": "open", "meta": map[string]any{"x": []any{1.0, 2.0}}},
				wantCustom: map[string]any{},
				wantEvents: []string{models.EventRecordUpdated, models.EventCustomDataUpdated},
			},
			{
				name: "match field absent", body: `{"qty": 1}`,
				wantDetails: []models.FieldError{{Field: "fields.sku", Rule: rule(0), Source: "$.payload.item.sku"}},
			},
			{
				name: "match field null", body: `{"item": {"sku": null}}`,
				wantDetails: []models.FieldError{{Field: "fields.sku", Rule: rule(0), Source: "$.payload.item.sku"}},
			},
			{
				name: "match field an object", body: `{"item": {"sku": {"id": 1}}}`,
				wantDetails: []models.FieldError{{Field: "fields.sku", Rule: rule(0), Source: "$.payload.item.sku"}},
			},
			{
				name: "wrong type on update", body: `{"item": {"sku": "A1"}, "qty": "x"}`,
				wantDetails: []models.FieldError{{Field: "fields.qty", Rule: rule(1), Source: "$.payload.qty"}},
			},
			{
				name: "wrong type on create", body: `{"item": {"sku": "B2"}, "qty": "x"}`,
				wantDetails: []models.FieldError{{Field: "fields.qty", Rule: rule(1), Source: "$.payload.qty"}},
			},
			{
				name: "forbidden transition", body: `{"item": {"sku": "A1"}, "state": "new"}`,
				wantDetails: []models.FieldError{{Field: "fields.status", Rule: rule(2), Source: "$.payload.state"}},
			},
		}
		wantLog := []models.InboundEvent{{Status: 202, Action: ptr(models.InboundCreated), RecordID: &id}}
		for _, st := range steps {
			rec, _, err := e.apply(t, st.body)
			if st.wantDetails != nil {
				if diff := cmp.Diff(st.wantDetails, mappingDetails(t, err), ignoreMessage); diff != "" {
					t.Errorf("%s: details (-want +got):\n%s", st.name, diff)
				}
				wantLog = append(wantLog, models.InboundEvent{Status: 422, Error: string(models.KindMappingFailed), ErrorDetails: st.wantDetails})
			} else {
				if err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if rec.ID != id || rec.Version != st.wantVersion {
					t.Errorf("%s: record %s at version %d, want %s at %d", st.name, rec.ID, rec.Version, id, st.wantVersion)
				}
				wantLog = append(wantLog, models.InboundEvent{Status: 202, Action: ptr(models.InboundUpdated), RecordID: &id})
			}
			version, fields, custom := storedRecord(t, s, e.tenant, e.m.ID, id)
			if st.wantFields != nil {
				if diff := cmp.Diff(st.wantFields, fields); diff != "" {
					t.Errorf("%s: fields (-want +got):\n%s", st.name, diff)
				}
				if diff := cmp.Diff(st.wantCustom, custom); diff != "" {
					t.Errorf("%s: custom data (-want +got):\n%s", st.name, diff)
				}
				if version != st.wantVersion {
					t.Errorf("%s: stored version %d, want %d", st.name, version, st.wantVersion)
				}
			}
			var want []eventRef
			for _, typ := range st.wantEvents {
				want = append(want, eventRef{typ, id})
			}
			if diff := cmp.Diff(want, takeEvents(t, s)); diff != "" {
				t.Errorf("%s: events (-want +got):\n%s", st.name, diff)
			}
		}
		if _, total, err := s.ListRecords(ctx, e.m, models.RecordQuery{Page: models.Page{Page: 1, Limit: 10}}); err != nil || total != 1 {
			t.Errorf("records: total %d, %v; want 1 (refused calls create none)", total, err)
		}

		got, total, err := s.ListInboundEvents(ctx, e.tenant, e.m.ID, models.InboundEventQuery{Page: models.Page{Page: 1, Limit: 100}})
		if err != nil {
			t.Fatal(err)
		}
		if total != int64(len(wantLog)) {
			t.Errorf("ListInboundEvents total %d, want %d", total, len(wantLog))
		}
		for i, j := 0, len(wantLog)-1; i < j; i, j = i+1, j-1 {
			wantLog[i], wantLog[j] = wantLog[j], wantLog[i] // newest first
		}
		opts := cmp.Options{
			cmpopts.IgnoreFields(models.InboundEvent{}, "ID", "TenantID", "ModuleID", "WebhookID", "RequestID", "ErrorMessage", "Headers", "Body", "BodySize", "ReceivedAt"),
			ignoreMessage, cmpopts.EquateEmpty(),
		}
		if diff := cmp.Diff(wantLog, got, opts); diff != "" {
			t.Errorf("inbound events (-want +got):\n%s", diff)
		}
		for _, ev := range got {
			if ev.WebhookID != e.w.ID || ev.ModuleID != e.m.ID || ev.TenantID != e.tenant {
				t.Errorf("inbound event %s names webhook %s, module %s, tenant %s", ev.ID, ev.WebhookID, ev.ModuleID, ev.TenantID)
			}
		}

		other, _ := newTenant(t, s)
		if _, _, err := s.ListInboundEvents(ctx, other, e.m.ID, models.InboundEventQuery{Page: models.Page{Page: 1, Limit: 10}}); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("ListInboundEvents by another tenant: %v, want not found", err)
		}
	})
}

func TestApplyInboundWithoutMatchFieldsCreates(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		s := storetest.Open(t, d)
		e := newInboundEnv(t, s, models.InboundInput{Mapping: inboundRules, Enabled: true})
		const body = `{"item": {"sku": "A1"}, "qty": 1}`
		first, ev1, err := e.apply(t, body)
		if err != nil {
			t.Fatal(err)
		}
		second, ev2, err := e.apply(t, body)
		if err != nil {
			t.Fatal(err)
		}
		if first.ID == second.ID || *ev1.Action != models.InboundCreated || *ev2.Action != models.InboundCreated {
			t.Errorf("two calls gave records %s (%s) and %s (%s); want two created", first.ID, *ev1.Action, second.ID, *ev2.Action)
		}
		// Without match fields a missing required field is a plain
		// validation failure, still named by its rule.
		_, _, err = e.apply(t, `{"qty": 1}`)
		want := []models.FieldError{{Field: "fields.sku", Rule: ptr(0), Source: "$.payload.item.sku"}}
		if diff := cmp.Diff(want, mappingDetails(t, err), ignoreMessage); diff != "" {
			t.Errorf("details (-want +got):\n%s", diff)
		}
		if _, total, err := s.ListRecords(context.Background(), e.m, models.RecordQuery{Page: models.Page{Page: 1, Limit: 10}}); err != nil || total != 2 {
			t.Errorf("records: total %d, %v; want 2", total, err)
		}
	})
}

// TestApplyInboundConcurrent: concurrent calls with equal match values
// make one record, whatever the dialect.
func TestApplyInboundConcurrent(t *testing.T) {
	const same = `{"item": {"sku": "A1"}, "qty": 3, "ref": "ext-1"}`
	tests := []struct {
		name string
		// caller i of round r sends bodies[i%len(bodies)] with $R
		// replaced by r: every round needs a record of its own.
		match  string
		bodies []string
		rounds int
	}{
		{"field", "sku", []string{same}, 1},
		{"custom data", "custom_data.external_id", []string{same}, 1},
		// 42 and 42.0 match the same records on both dialects, so they
		// must not make two either. Only the first calls of a round can
		// race: several rounds make a miss unlikely.
		{"equal numbers spelt differently", "custom_data.external_id", []string{
			`{"item": {"sku": "A1"}, "ref": 4$R}`, `{"item": {"sku": "A1"}, "ref": 4$R.0}`,
		}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachDialect(t, func(t *testing.T, d models.Dialect) {
				s := storetest.Open(t, d)
				e := newInboundEnv(t, s, models.InboundInput{Mapping: inboundRules, MatchFields: []string{tt.match}, Enabled: true})
				const callers = 16
				for r := range tt.rounds {
					actions := make([]string, callers)
					errs := make([]error, callers)
					var wg sync.WaitGroup
					for i := range callers {
						body := strings.ReplaceAll(tt.bodies[i%len(tt.bodies)], "$R", fmt.Sprint(r))
						payload := decodePayload(t, body) // one each: values share the payload
						wg.Go(func() {
							_, ev, err := e.send(payload, body)
							errs[i] = err
							if err == nil && ev.Action != nil {
								actions[i] = *ev.Action
							}
						})
					}
					wg.Wait()
					count := map[string]int{}
					for i, err := range errs {
						if err != nil {
							t.Errorf("round %d, caller %d: %v", r, i, err)
						}
						count[actions[i]]++
					}
					if diff := cmp.Diff(map[string]int{models.InboundCreated: 1, models.InboundUpdated: callers - 1}, count); diff != "" {
						t.Errorf("round %d: actions (-want +got):\n%s", r, diff)
					}
				}
				recs, total, err := s.ListRecords(context.Background(), e.m, models.RecordQuery{Page: models.Page{Page: 1, Limit: 100}})
				if err != nil {
					t.Fatal(err)
				}
				if total != int64(tt.rounds) || len(recs) != tt.rounds {
					t.Errorf("%d records (total %d), want %d", len(recs), total, tt.rounds)
				}
			})
		})
	}
}

// TestApplyInboundMatchTypes: a match compares JSON values, type and all,
// alike on both dialects.
func TestApplyInboundMatchTypes(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		tenant, _ := newTenant(t, s)
		fields := []models.Field{
			{Name: "n", Type: models.TypeInteger},
			{Name: "price", Type: models.TypeNumber},
			{Name: "flag", Type: models.TypeBoolean},
		}
		rules := []mapping.Rule{
			{Source: "$.payload.n", Field: "n"},
			{Source: "$.payload.price", Field: "price"},
			{Source: "$.payload.flag", Field: "flag"},
			{Source: "$.payload.k", Field: "custom_data.k"},
		}
		tests := []struct {
			name        string
			match       string
			fields      map[string]any // of the existing record
			custom      map[string]any
			body        string
			wantUpdated bool
		}{
			{"integer", "n", map[string]any{"n": json.Number("42")}, nil, `{"n": 42}`, true},
			{"other integer", "n", map[string]any{"n": json.Number("42")}, nil, `{"n": 43}`, false},
			{"number", "price", map[string]any{"price": json.Number("1.5")}, nil, `{"price": 1.5}`, true},
			{"true", "flag", map[string]any{"flag": true}, nil, `{"flag": true}`, true},
			{"false", "flag", map[string]any{"flag": false}, nil, `{"flag": false}`, true},
			{"false is not true", "flag", map[string]any{"flag": false}, nil, `{"flag": true}`, false},
			{"custom string", "custom_data.k", nil, map[string]any{"k": "abc"}, `{"k": "abc"}`, true},
			{"custom number", "custom_data.k", nil, map[string]any{"k": json.Number("42")}, `{"k": 42}`, true},
			{"custom true", "custom_data.k", nil, map[string]any{"k": true}, `{"k": true}`, true},
			{"1 is not true", "custom_data.k", nil, map[string]any{"k": json.Number("1")}, `{"k": true}`, false},
			{"0 is not false", "custom_data.k", nil, map[string]any{"k": json.Number("0")}, `{"k": false}`, false},
			{"42 is not \"42\"", "custom_data.k", nil, map[string]any{"k": json.Number("42")}, `{"k": "42"}`, false},
			{"\"true\" is not true", "custom_data.k", nil, map[string]any{"k": "true"}, `{"k": true}`, false},
			{"\"42\" is not 42", "custom_data.k", nil, map[string]any{"k": "42"}, `{"k": 42}`, false},
			{"true is not 1", "custom_data.k", nil, map[string]any{"k": true}, `{"k": 1}`, false},
			{"false is not 0", "custom_data.k", nil, map[string]any{"k": false}, `{"k": 0}`, false},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				slug := fmt.Sprintf("m%d", i)
				m, err := s.CreateModule(ctx, tenant, models.ModuleInput{Slug: &slug, Name: &slug, Fields: &fields})
				if err != nil {
					t.Fatal(err)
				}
				existing, err := s.CreateRecord(ctx, m, tt.fields, tt.custom)
				if err != nil {
					t.Fatal(err)
				}
				w, _, _, err := s.ConfigureInbound(ctx, tenant, m.ID, models.InboundInput{Mapping: rules, MatchFields: []string{tt.match}, Enabled: true})
				if err != nil {
					t.Fatal(err)
				}
				e := &inboundEnv{s: s, tenant: tenant, m: m, w: w, base: time.Now().UTC()}
				rec, ev, err := e.apply(t, tt.body)
				if err != nil {
					t.Fatal(err)
				}
				if gotUpdated := rec.ID == existing.ID; gotUpdated != tt.wantUpdated {
					t.Errorf("%s matched the record holding %v%v: %v (action %s), want %v", tt.body, tt.fields, tt.custom, gotUpdated, *ev.Action, tt.wantUpdated)
				}
				wantAction := models.InboundCreated
				if tt.wantUpdated {
					wantAction = models.InboundUpdated
				}
				if *ev.Action != wantAction {
					t.Errorf("action %s, want %s", *ev.Action, wantAction)
				}
			})
		}
	})
}

// TestDeleteModuleRemovesInbound: a deleted module takes its inbound
// webhook and the calls it received along; deleting only the webhook keeps
// the calls.
func TestDeleteModuleRemovesInbound(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		db := storetest.NewDB(t, d)
		s := db.Open(t, models.Options{})
		in := models.InboundInput{Mapping: inboundRules, MatchFields: []string{"sku"}, Enabled: true}
		e := newInboundEnv(t, s, in)
		kept := newInboundModule(t, s, e.tenant, "kept")
		keptW, _, _, err := s.ConfigureInbound(ctx, e.tenant, kept.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		keptEnv := &inboundEnv{s: s, tenant: e.tenant, m: kept, w: keptW, base: e.base}
		for _, env := range []*inboundEnv{e, keptEnv} {
			if _, _, err := env.apply(t, `{"item": {"sku": "A1"}}`); err != nil {
				t.Fatal(err)
			}
			if _, _, err := env.apply(t, `{"qty": 1}`); models.ErrorKind(err) != models.KindMappingFailed {
				t.Fatalf("refused call: %v, want mapping_failed", err)
			}
		}

		if err := s.DeleteInbound(ctx, e.tenant, kept.ID); err != nil {
			t.Fatal(err)
		}
		if _, total, err := s.ListInboundEvents(ctx, e.tenant, kept.ID, models.InboundEventQuery{Page: models.Page{Page: 1, Limit: 10}}); err != nil || total != 2 {
			t.Errorf("inbound events after DeleteInbound: total %d, %v; want the 2 kept", total, err)
		}

		if err := s.DeleteModule(ctx, e.tenant, e.m.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LookupInbound(ctx, "orders", e.token); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("LookupInbound after DeleteModule: %v, want not found", err)
		}
		if _, _, err := s.ListInboundEvents(ctx, e.tenant, e.m.ID, models.InboundEventQuery{Page: models.Page{Page: 1, Limit: 10}}); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("ListInboundEvents after DeleteModule: %v, want not found", err)
		}
		// A module of the same slug does not inherit the old URL.
		newInboundModule(t, s, e.tenant, "orders")
		if _, err := s.LookupInbound(ctx, "orders", e.token); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("LookupInbound on a recreated module: %v, want not found", err)
		}
		for _, table := range []string{"inbound_webhooks", "inbound_events"} {
			for _, row := range db.Rows(t, "SELECT * FROM "+table) {
				if row["module_id"] == e.m.ID {
					t.Errorf("%s row of the deleted module left: %v", table, row["id"])
				}
			}
		}
		if got := len(db.Rows(t, "SELECT * FROM inbound_events")); got != 2 {
			t.Errorf("%d inbound events left, want the other module's 2", got)
		}
	})
}

func TestInboundDelivery(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		s := storetest.Open(t, d)
		e := newInboundEnv(t, s, models.InboundInput{Mapping: inboundRules, Enabled: true})
		other := newInboundEnv(t, s, models.InboundInput{Mapping: inboundRules, Enabled: true})
		// send applies body with a delivery id and, as the receiver does,
		// keeps a refused call.
		send := func(e *inboundEnv, id, body string) *models.InboundEvent {
			t.Helper()
			ev := &models.InboundEvent{
				ID: models.NewID(models.PrefixInboundEvent), TenantID: e.w.TenantID, ModuleID: e.w.ModuleID, WebhookID: e.w.ID,
				RequestID: models.NewID(models.PrefixRequest), Body: body, BodySize: len(body), DeliveryID: &id, ReceivedAt: time.Now(),
			}
			if _, err := s.ApplyInbound(ctx, e.w, decodePayload(t, body), ev); err != nil {
				ev.SetError(422, "mapping_failed", err.Error(), nil)
				if err := s.RecordInboundEvent(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
			return ev
		}
		type found struct {
			Applied string
			Seen    bool
		}
		lookup := func(e *inboundEnv, id string) found {
			t.Helper()
			applied, seen, err := s.InboundDelivery(ctx, e.w.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			var f found
			if applied != nil {
				f.Applied = applied.ID
			}
			f.Seen = seen
			return f
		}

		if got := lookup(e, "d-1"); got != (found{}) {
			t.Errorf("before any call: %+v, want nothing", got)
		}
		send(e, "d-1", `{"qty": 1}`) // no sku: refused
		if got := lookup(e, "d-1"); got != (found{Seen: true}) {
			t.Errorf("after a refused call: %+v, want seen, not applied", got)
		}
		first := send(e, "d-1", `{"item": {"sku": "A1"}}`)
		send(e, "d-1", `{"item": {"sku": "A1"}}`) // a duplicate
		if got, want := lookup(e, "d-1"), (found{Applied: first.ID, Seen: true}); got != want {
			t.Errorf("after the call was applied and repeated: %+v, want %+v", got, want)
		}
		if got := lookup(other, "d-1"); got != (found{}) {
			t.Errorf("another webhook: %+v, want nothing", got)
		}
	})
}
