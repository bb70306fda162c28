package models

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	"gorm.io/gorm"
)

// Event is a record change in the outbox: written in the transaction of the
// change, delivered by the dispatcher. Payload is the exact body that every
// delivery of the event sends.
type Event struct {
	ID           string `gorm:"primaryKey"`
	TenantID     string
	ModuleID     string
	RecordID     string
	Type         string
	Payload      string
	OccurredAt   time.Time `gorm:"autoCreateTime:false"`
	DispatchedAt *time.Time
}

// eventBody is the JSON body of an event (SPEC §6).
type eventBody struct {
	ID         string          `json:"id"`
	Event      string          `json:"event"`
	OccurredAt string          `json:"occurred_at"`
	TenantID   string          `json:"tenant_id"`
	Module     eventModule     `json:"module"`
	Record     eventRecord     `json:"record"`
	Changes    map[string]any  `json:"changes"`
	Status     *StatusMovement `json:"status,omitempty"`
}

type eventModule struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
}

// eventRecord has the shape of a record in the API.
type eventRecord struct {
	ID         string         `json:"id"`
	ModuleID   string         `json:"module_id"`
	Fields     map[string]any `json:"fields"`
	CustomData map[string]any `json:"custom_data"`
	Version    int64          `json:"version"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

// StatusMovement is the status part of a status_change event.
type StatusMovement struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

type change struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// recordEvents returns the events of a record change: before is nil for a
// creation, after nil for a deletion. A change that changes nothing has no
// events.
func recordEvents(m *Module, before, after *Record, at time.Time) ([]Event, error) {
	type ev struct {
		typ     string
		changes map[string]any
		status  *StatusMovement
	}
	var evs []ev
	shown := after
	switch {
	case before == nil:
		evs = append(evs, ev{typ: EventRecordCreated, changes: map[string]any{}})
	case after == nil:
		shown = before
		evs = append(evs, ev{typ: EventRecordDeleted, changes: map[string]any{}})
	default:
		fieldChanges := map[string]any{}
		var moves []*StatusMovement
		for _, name := range unionKeys(before.Fields, after.Fields) {
			from, to := before.Fields[name], after.Fields[name]
			if reflect.DeepEqual(from, to) {
				continue
			}
			fieldChanges[name] = change{from, to}
			if f, ok := m.Field(name); ok && f.Type == TypeStatus {
				moves = append(moves, &StatusMovement{Field: name, From: from, To: to})
			}
		}
		if len(fieldChanges) > 0 {
			evs = append(evs, ev{typ: EventRecordUpdated, changes: map[string]any{"fields": fieldChanges}})
		}
		for _, mv := range moves {
			evs = append(evs, ev{typ: EventStatusChange, changes: map[string]any{"fields": map[string]any{mv.Field: change{mv.From, mv.To}}}, status: mv})
		}
		if !reflect.DeepEqual(map[string]any(before.CustomData), map[string]any(after.CustomData)) {
			evs = append(evs, ev{typ: EventCustomDataUpdated, changes: map[string]any{"custom_data": change{nonNil(before.CustomData), nonNil(after.CustomData)}}})
		}
	}
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		id := NewID(PrefixEvent)
		body, err := json.Marshal(eventBody{
			ID: id, Event: e.typ, OccurredAt: at.UTC().Format(time.RFC3339Nano), TenantID: m.TenantID,
			Module: eventModule{ID: m.ID, Slug: m.Slug},
			Record: eventRecord{
				ID: shown.ID, ModuleID: shown.ModuleID, Fields: nonNil(shown.Fields), CustomData: nonNil(shown.CustomData),
				Version: shown.Version, CreatedAt: shown.CreatedAt, UpdatedAt: shown.UpdatedAt,
			},
			Changes: e.changes, Status: e.status,
		})
		if err != nil {
			return nil, fmt.Errorf("encode event: %w", err)
		}
		out = append(out, Event{ID: id, TenantID: m.TenantID, ModuleID: m.ID, RecordID: shown.ID, Type: e.typ, Payload: string(body), OccurredAt: at})
	}
	return out, nil
}

func nonNil(m JSONObject) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// insertEvents writes events in the caller's transaction. Dispatchers in
// this process are woken after the commit (eventsWritten); those of other
// processes find the events by polling. A PostgreSQL NOTIFY per write would
// serialise every commit on the notification queue's lock: the bench saw
// record creates fall to a quarter.
func (s *Store) insertEvents(tx *gorm.DB, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := tx.Create(&events).Error; err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	return nil
}

// eventsWritten wakes this process's dispatcher after a commit.
func (s *Store) eventsWritten() {
	select {
	case s.eventWake <- struct{}{}:
	default:
	}
}

// EventWake delivers a signal soon after events were committed by this
// process.
func (s *Store) EventWake() <-chan struct{} { return s.eventWake }

// PendingEvents returns up to limit events not yet dispatched, oldest first.
func (s *Store) PendingEvents(ctx context.Context, limit int) ([]Event, error) {
	var out []Event
	if err := s.r.WithContext(ctx).Where("dispatched_at IS NULL").Order("occurred_at, id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("pending events: %w", err)
	}
	return out, nil
}

// MarkDispatched records that events' deliveries were started.
func (s *Store) MarkDispatched(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Model(&Event{}).Where("id IN ? AND dispatched_at IS NULL", ids).Update("dispatched_at", s.now()).Error
	})
	if err != nil {
		return fmt.Errorf("mark dispatched: %w", err)
	}
	return nil
}

// GetEvent returns one of the tenant's events.
func (s *Store) GetEvent(ctx context.Context, tenantID, id string) (*Event, error) {
	var e Event
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenantID, id).Take(&e).Error; err != nil {
		return nil, notFoundOr(err, "load event")
	}
	return &e, nil
}

// EventBacklog returns how many events wait for dispatch and the age of the
// oldest, for metrics.
func (s *Store) EventBacklog(ctx context.Context) (int64, time.Duration, error) {
	var n int64
	if err := s.r.WithContext(ctx).Model(&Event{}).Where("dispatched_at IS NULL").Count(&n).Error; err != nil {
		return 0, 0, fmt.Errorf("event backlog: %w", err)
	}
	if n == 0 {
		return 0, 0, nil
	}
	var oldest Event
	if err := s.r.WithContext(ctx).Where("dispatched_at IS NULL").Order("occurred_at, id").Limit(1).Take(&oldest).Error; err != nil {
		return n, 0, notFoundOr(err, "oldest event")
	}
	return n, s.now().Sub(oldest.OccurredAt), nil
}

// SubscribedEndpoints returns the tenant's enabled endpoints that want an
// event of type t on module.
func (s *Store) SubscribedEndpoints(ctx context.Context, tenantID, t, moduleID string) ([]WebhookEndpoint, error) {
	var all []WebhookEndpoint
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND enabled = ?", tenantID, true).Find(&all).Error; err != nil {
		return nil, fmt.Errorf("subscribed endpoints: %w", err)
	}
	out := all[:0]
	for _, e := range all {
		if e.Subscribes(t, moduleID) {
			out = append(out, e)
		}
	}
	return out, nil
}
