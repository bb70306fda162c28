package models_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// wantDisabledEvent checks that the outbox holds exactly one
// endpoint_disabled event, about ep, for reason, at the endpoint's
// disabled_at, with the documented body byte for byte.
func wantDisabledEvent(t *testing.T, s *models.Store, ep *models.WebhookEndpoint, reason string) {
	t.Helper()
	evs := disabledEvents(t, s)
	if len(evs) != 1 {
		t.Fatalf("%d endpoint_disabled events, want 1: %+v", len(evs), evs)
	}
	ev := evs[0]
	got, err := s.GetEndpoint(t.Context(), ep.TenantID, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Enabled || got.DisabledAt == nil || got.DisabledReason == nil || *got.DisabledReason != reason {
		t.Fatalf("endpoint after the disable: enabled %v, disabled_at %v, reason %v; want disabled for %s", got.Enabled, got.DisabledAt, got.DisabledReason, reason)
	}
	want := fmt.Sprintf(`{"id":%q,"event":"endpoint_disabled","occurred_at":%q,"tenant_id":%q,"endpoint":{"id":%q,"url":%q},"reason":%q}`,
		ev.ID, got.DisabledAt.UTC().Format(time.RFC3339Nano), ep.TenantID, ep.ID, got.URL, reason)
	if ev.Payload != want {
		t.Errorf("body\n got %s\nwant %s", ev.Payload, want)
	}
	if ev.TenantID != ep.TenantID || ev.ModuleID != "" || ev.RecordID != "" || !ev.OccurredAt.Equal(*got.DisabledAt) {
		t.Errorf("event row %+v, want tenant %s, no module, no record, occurred at %v", ev, ep.TenantID, got.DisabledAt)
	}
	if id, err := ev.DisabledEndpointID(); err != nil || id != ep.ID {
		t.Errorf("DisabledEndpointID() = %q, %v; want %s", id, err, ep.ID)
	}
}

// TestEndpointDisabledEvent: each way an endpoint goes from enabled to
// disabled writes one endpoint_disabled event with its reason; what does
// not disable it, or disables it again, writes none.
func TestEndpointDisabledEvent(t *testing.T) {
	const window = 10 * time.Hour
	start := time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC)
	fail := func(s *models.Store, ep *models.WebhookEndpoint, at time.Duration, window time.Duration) error {
		return s.RecordDeliveryEnd(context.Background(), ep.TenantID, ep.ID, false, start.Add(at), window)
	}
	tests := []struct {
		name string
		// disable acts on an enabled endpoint; reason is the event's
		// reason, "" when none may be written.
		disable func(t *testing.T, s *models.Store, ep *models.WebhookEndpoint) error
		reason  string
	}{
		{
			name: "410 gone",
			disable: func(t *testing.T, s *models.Store, ep *models.WebhookEndpoint) error {
				return s.DisableEndpoint(t.Context(), ep.TenantID, ep.ID)
			},
			reason: models.DisabledGone,
		},
		{
			name: "PATCH enabled false",
			disable: func(t *testing.T, s *models.Store, ep *models.WebhookEndpoint) error {
				_, err := s.UpdateEndpoint(t.Context(), ep.TenantID, ep.ID, models.EndpointInput{Enabled: ptr(false)}, allowURL)
				return err
			},
			reason: models.DisabledManual,
		},
		{
			name: "5 failures over the window",
			disable: func(t *testing.T, s *models.Store, ep *models.WebhookEndpoint) error {
				for i, at := range []time.Duration{0, time.Hour, 2 * time.Hour, 3 * time.Hour} {
					if err := fail(s, ep, at, window); err != nil {
						return err
					}
					if n := len(disabledEvents(t, s)); n != 0 {
						t.Errorf("after failure %d: %d endpoint_disabled events", i+1, n)
					}
				}
				return fail(s, ep, window, window)
			},
			reason: models.DisabledFailing,
		},
		{
			name: "5 failures within the window",
			disable: func(t *testing.T, s *models.Store, ep *models.WebhookEndpoint) error {
				for _, at := range []time.Duration{0, time.Hour, 2 * time.Hour, 3 * time.Hour, window - time.Second} {
					if err := fail(s, ep, at, window); err != nil {
						return err
					}
				}
				return nil
			},
		},
		{
			name: "a success between resets",
			disable: func(t *testing.T, s *models.Store, ep *models.WebhookEndpoint) error {
				for _, at := range []time.Duration{0, time.Hour, 2 * time.Hour, 3 * time.Hour} {
					if err := fail(s, ep, at, window); err != nil {
						return err
					}
				}
				if err := s.RecordDeliveryEnd(t.Context(), ep.TenantID, ep.ID, true, start.Add(4*time.Hour), window); err != nil {
					return err
				}
				return fail(s, ep, 2*window, window)
			},
		},
		{
			name: "window 0 never disables",
			disable: func(t *testing.T, s *models.Store, ep *models.WebhookEndpoint) error {
				for i := range 6 {
					if err := fail(s, ep, time.Duration(i)*window, 0); err != nil {
						return err
					}
				}
				return nil
			},
		},
	}
	for _, d := range storetest.Dialects {
		for _, tc := range tests {
			t.Run(string(d)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := storetest.Open(t, d)
				tenantID, _ := newTenant(t, s)
				ep := newHookEndpoint(t, s, tenantID)
				bystander := newHookEndpoint(t, s, tenantID)
				if err := tc.disable(t, s, ep); err != nil {
					t.Fatal(err)
				}
				if tc.reason == "" {
					if evs := disabledEvents(t, s); len(evs) != 0 {
						t.Errorf("endpoint_disabled events %+v, want none", evs)
					}
					if got, err := s.GetEndpoint(t.Context(), tenantID, ep.ID); err != nil || !got.Enabled {
						t.Errorf("endpoint %+v, %v; want it enabled", got, err)
					}
					return
				}
				wantDisabledEvent(t, s, ep, tc.reason)
				before, _ := s.GetEndpoint(t.Context(), tenantID, ep.ID)

				// Disabled already: whichever way comes next, nothing
				// changes and nothing more is announced.
				if err := s.DisableEndpoint(t.Context(), tenantID, ep.ID); err != nil {
					t.Errorf("DisableEndpoint of a disabled endpoint: %v", err)
				}
				desc := "still off"
				if _, err := s.UpdateEndpoint(t.Context(), tenantID, ep.ID, models.EndpointInput{Enabled: ptr(false), Description: &desc}, allowURL); err != nil {
					t.Errorf("PATCH of a disabled endpoint: %v", err)
				}
				if err := fail(s, ep, 3*window, window); err != nil {
					t.Errorf("a failure of a disabled endpoint: %v", err)
				}
				wantDisabledEvent(t, s, ep, tc.reason)
				after, _ := s.GetEndpoint(t.Context(), tenantID, ep.ID)
				if !after.DisabledAt.Equal(*before.DisabledAt) || after.Description != desc {
					t.Errorf("disabled_at %v then %v, description %q: the first disable must stay, the PATCH apply", before.DisabledAt, after.DisabledAt, after.Description)
				}
				if got, err := s.GetEndpoint(t.Context(), tenantID, bystander.ID); err != nil || !got.Enabled {
					t.Errorf("the other endpoint: %+v, %v; want it enabled", got, err)
				}
			})
		}
	}
}

// TestDisableEndpointDeleted: a 410 for a deleted endpoint is ErrNotFound
// and announces nothing.
func TestDisableEndpointDeleted(t *testing.T) {
	s := storetest.Open(t, models.SQLite)
	tenantID, _ := newTenant(t, s)
	ep := newHookEndpoint(t, s, tenantID)
	if err := s.DeleteEndpoint(t.Context(), tenantID, ep.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DisableEndpoint(t.Context(), tenantID, ep.ID); !errors.Is(err, models.ErrNotFound) {
		t.Errorf("got %v, want ErrNotFound", err)
	}
	if evs := disabledEvents(t, s); len(evs) != 0 {
		t.Errorf("endpoint_disabled events %+v, want none", evs)
	}
}

// TestEndpointDisabledEventSameTransaction: when the event cannot be
// written, the endpoint is not disabled either (and a failure is not
// counted): the two are one transaction.
func TestEndpointDisabledEventSameTransaction(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		db := storetest.NewDB(t, d)
		s := db.Open(t, models.Options{})
		tenantID, _ := newTenant(t, s)
		ep := newHookEndpoint(t, s, tenantID)
		at := time.Now().Add(-time.Hour)
		for range models.DisableAfterFailures - 1 {
			if err := s.RecordDeliveryEnd(ctx, tenantID, ep.ID, false, at, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		// Writes to the outbox fail from here on.
		if _, err := db.SQL(t).ExecContext(ctx, "ALTER TABLE events RENAME TO events_away"); err != nil {
			t.Fatal(err)
		}
		disables := map[string]func() error{
			"gone":    func() error { return s.DisableEndpoint(ctx, tenantID, ep.ID) },
			"failing": func() error { return s.RecordDeliveryEnd(ctx, tenantID, ep.ID, false, time.Now(), time.Minute) },
			"manual": func() error {
				_, err := s.UpdateEndpoint(ctx, tenantID, ep.ID, models.EndpointInput{Enabled: ptr(false)}, allowURL)
				return err
			},
		}
		for name, disable := range disables {
			if err := disable(); err == nil {
				t.Errorf("%s: no error without an outbox", name)
			}
			got, err := s.GetEndpoint(ctx, tenantID, ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Enabled || got.DisabledAt != nil || got.DisabledReason != nil || got.ConsecutiveFailures != models.DisableAfterFailures-1 {
				t.Errorf("%s: endpoint enabled %v, disabled_at %v, reason %v, %d failures; want it as it was",
					name, got.Enabled, got.DisabledAt, got.DisabledReason, got.ConsecutiveFailures)
			}
		}
	})
}

// TestEndpointDisabledEventOnce: disables racing on one endpoint, from two
// processes and every path, announce it once.
func TestEndpointDisabledEventOnce(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		db := storetest.NewDB(t, d)
		stores := []*models.Store{db.Open(t, models.Options{}), db.Open(t, models.Options{})}
		tenantID, _ := newTenant(t, stores[0])
		ep := newHookEndpoint(t, stores[0], tenantID)
		at := time.Now().Add(-time.Hour)
		for range models.DisableAfterFailures - 1 {
			if err := stores[0].RecordDeliveryEnd(ctx, tenantID, ep.ID, false, at, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		var (
			wg    sync.WaitGroup
			ready = make(chan struct{})
		)
		for _, s := range stores {
			for range 2 {
				wg.Go(func() {
					<-ready
					if err := s.DisableEndpoint(ctx, tenantID, ep.ID); err != nil {
						t.Error(err)
					}
				})
				wg.Go(func() {
					<-ready
					if _, err := s.UpdateEndpoint(ctx, tenantID, ep.ID, models.EndpointInput{Enabled: ptr(false)}, allowURL); err != nil {
						t.Error(err)
					}
				})
				wg.Go(func() {
					<-ready
					if err := s.RecordDeliveryEnd(ctx, tenantID, ep.ID, false, time.Now(), time.Minute); err != nil {
						t.Error(err)
					}
				})
			}
		}
		close(ready)
		wg.Wait()
		got, err := stores[0].GetEndpoint(ctx, tenantID, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.DisabledReason == nil {
			t.Fatalf("endpoint not disabled: %+v", got)
		}
		wantDisabledEvent(t, stores[0], ep, *got.DisabledReason)
	})
}

// TestInsertSkippedDeliveries: a skipped delivery is one row per (event,
// endpoint) however often it is recorded, with the first time it was.
func TestInsertSkippedDeliveries(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		clock := storetest.NewClock()
		s := storetest.OpenWithClock(t, d, clock.Now)
		ev := &models.Event{ID: "evt_1", TenantID: "ten_1", Type: models.EventRecordCreated}
		eps := []models.WebhookEndpoint{{ID: "whe_1", URL: "https://a.example/"}, {ID: "whe_2", URL: "https://b.example/"}}
		first := clock.Now().UTC().Truncate(time.Microsecond)
		if err := s.InsertSkippedDeliveries(ctx, ev, eps); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		if err := s.InsertSkippedDeliveries(ctx, ev, eps[1:]); err != nil {
			t.Fatalf("again: %v", err)
		}
		rows, total, err := s.ListDeliveries(ctx, "ten_1", models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 10}, Error: models.DeliveryErrEndpointDisabled})
		if err != nil {
			t.Fatal(err)
		}
		if total != 2 {
			t.Fatalf("%d rows, want 2: %+v", total, rows)
		}
		urls := map[string]string{"whe_1": "https://a.example/", "whe_2": "https://b.example/"}
		for _, r := range rows {
			if r.ID != models.SkippedDeliveryID("evt_1", r.EndpointID) || !strings.HasPrefix(r.ID, "whd_skip_") {
				t.Errorf("row id %s, want whd_skip_ and the pair's hash", r.ID)
			}
			r.ID = ""
			r.StartedAt, r.FinishedAt = r.StartedAt.UTC(), r.FinishedAt.UTC()
			want := models.WebhookDelivery{
				TenantID: "ten_1", EventID: "evt_1", EventType: models.EventRecordCreated, EndpointID: r.EndpointID,
				RequestURL: urls[r.EndpointID], RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{},
				Error: models.DeliveryErrEndpointDisabled, ErrorMessage: r.ErrorMessage, StartedAt: first, FinishedAt: first,
			}
			if diff := cmp.Diff(want, r); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
			if r.ErrorMessage == "" {
				t.Error("no error message")
			}
		}
	})
}
