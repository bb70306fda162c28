package models

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
)

// Event is a record change in the outbox: written in the transaction of the
// change, delivered by the dispatcher. Payload is the exact body that every
// delivery of the event sends. An operational event (endpoint_disabled) is
// about an endpoint: its ModuleID and RecordID are empty.
type Event struct {
	ID       string `gorm:"primaryKey"`
	TenantID string
	ModuleID string
	RecordID string
	// RecordVersion orders a record's events: the version of the record
	// the payload carries (its last version plus one for a deletion, which
	// is the record's next version); 0 for operational events. The outbox
	// hands a record's events out in (RecordVersion, OccurredAt, ID) order.
	RecordVersion int64
	Type          string
	Payload       string
	OccurredAt    time.Time `gorm:"autoCreateTime:false"`
	DispatchedAt  *time.Time
	// ClaimedBy and ClaimedUntil are the dispatcher that holds the pending
	// event and until when (see ClaimEvents).
	ClaimedBy    *string
	ClaimedUntil *time.Time
	// FanoutAfter is the id of the last endpoint, in id order, to which
	// the dispatcher started the event's delivery while the event stayed
	// pending: a round starts a bounded number of a tenant's deliveries,
	// and the next one goes on after it. "" when none was started.
	FanoutAfter string
	// TraceParent is the W3C traceparent of the span that wrote the event
	// (the API request, the inbound call, the attempt that disabled an
	// endpoint), which its deliveries continue; empty without one.
	TraceParent string
}

// eventBody is the JSON body of a record event, as receivers get it.
// Package eventschema describes it, with snapshotBody and
// endpointDisabledBody, to receivers as JSON Schema: change them together.
type eventBody struct {
	// Every type has the keys up to Changes. A status_change's Changes
	// hold its one status field; the record_updated of the same change
	// holds every field that changed, that one included.
	ID         string         `json:"id"`
	Event      string         `json:"event"`
	OccurredAt string         `json:"occurred_at"`
	TenantID   string         `json:"tenant_id"`
	Module     eventModule    `json:"module"`
	Record     eventRecord    `json:"record"`
	Changes    map[string]any `json:"changes"`
	// Status is a status_change's alone: nil, and so absent (never null),
	// on the other types.
	Status *StatusMovement `json:"status,omitempty"`
}

type eventModule struct {
	ID   string `json:"id"`
	Slug string `json:"slug"`
}

// eventRecord has the shape of a record in the API.
type eventRecord struct {
	ID       string `json:"id"`
	ModuleID string `json:"module_id"`
	// Fields and CustomData are objects, or their JSON when the record
	// holds it already (Record.FieldsJSON).
	Fields     any       `json:"fields"`
	CustomData any       `json:"custom_data"`
	Version    int64     `json:"version"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
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
	// Every event of one change carries the same version; a deletion's
	// payload shows the record as it was, and the deletion comes after
	// that version's events.
	version := shown.Version
	if after == nil {
		version++
	}
	var fields, customData any = nonNil(shown.Fields), nonNil(shown.CustomData)
	if e := shown.encoded; e != nil {
		fields, customData = e.fields, e.customData
	}
	occurredAt := at.UTC().Format(time.RFC3339Nano)
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		id := NewID(PrefixEvent)
		body, err := encodeEventBody(&eventBody{
			ID: id, Event: e.typ, OccurredAt: occurredAt, TenantID: m.TenantID,
			Module: eventModule{ID: m.ID, Slug: m.Slug},
			Record: eventRecord{
				ID: shown.ID, ModuleID: shown.ModuleID, Fields: fields, CustomData: customData,
				Version: shown.Version, CreatedAt: shown.CreatedAt, UpdatedAt: shown.UpdatedAt,
			},
			Changes: e.changes, Status: e.status,
		})
		if err != nil {
			return nil, err
		}
		out = append(out, Event{ID: id, TenantID: m.TenantID, ModuleID: m.ID, RecordID: shown.ID, RecordVersion: version, Type: e.typ, Payload: body, OccurredAt: at})
	}
	return out, nil
}

// encodeEventBody is the payload of an event: appended (appendEventBody),
// or encoded by json.Marshal when it holds what that does not write,
// which encodes it alike.
func encodeEventBody(body *eventBody) (string, error) {
	b := make([]byte, 0, eventBodySize(body))
	if b, ok := appendEventBody(b, body); ok {
		return string(b), nil
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("encode event: %w", err)
	}
	return string(b), nil
}

// eventBodySize is about the size of body's payload, for its buffer.
func eventBodySize(body *eventBody) int {
	n := 512 + len(body.Module.Slug)
	if raw, ok := body.Record.Fields.(json.RawMessage); ok {
		n += len(raw)
	}
	if raw, ok := body.Record.CustomData.(json.RawMessage); ok {
		n += len(raw)
	}
	return n
}

// appendEventBody appends body's JSON, byte for byte as json.Marshal
// writes it: a payload is signed and delivered as written, so how it is
// written must not change it. The record's fields and custom data, when
// they are its JSON (Record.FieldsJSON), were written by json.Marshal and
// go out as they are; other objects, the changes and the status movement
// are written as json.Marshal writes them. It reports false, with b as it
// was, when body holds what does not encode.
func appendEventBody(b []byte, body *eventBody) ([]byte, bool) {
	n0 := len(b)
	var ok bool
	b = append(b, `{"id":`...)
	b = AppendJSONString(b, body.ID)
	b = append(b, `,"event":`...)
	b = AppendJSONString(b, body.Event)
	b = append(b, `,"occurred_at":`...)
	b = AppendJSONString(b, body.OccurredAt)
	b = append(b, `,"tenant_id":`...)
	b = AppendJSONString(b, body.TenantID)
	b = append(b, `,"module":{"id":`...)
	b = AppendJSONString(b, body.Module.ID)
	b = append(b, `,"slug":`...)
	b = AppendJSONString(b, body.Module.Slug)
	r := &body.Record
	b = append(b, `},"record":{"id":`...)
	b = AppendJSONString(b, r.ID)
	b = append(b, `,"module_id":`...)
	b = AppendJSONString(b, r.ModuleID)
	b = append(b, `,"fields":`...)
	if b, ok = appendJSONValue(b, r.Fields); !ok {
		return b[:n0], false
	}
	b = append(b, `,"custom_data":`...)
	if b, ok = appendJSONValue(b, r.CustomData); !ok {
		return b[:n0], false
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, r.Version, 10)
	b = append(b, `,"created_at":`...)
	if b, ok = AppendJSONTime(b, r.CreatedAt); !ok {
		return b[:n0], false
	}
	b = append(b, `,"updated_at":`...)
	if b, ok = AppendJSONTime(b, r.UpdatedAt); !ok {
		return b[:n0], false
	}
	b = append(b, `},"changes":`...)
	if b, ok = appendJSONValue(b, body.Changes); !ok {
		return b[:n0], false
	}
	if body.Status != nil {
		b = append(b, `,"status":`...)
		if b, ok = appendJSONValue(b, body.Status); !ok {
			return b[:n0], false
		}
	}
	return append(b, '}'), true
}

// appendJSONValue appends v's JSON: a json.RawMessage as it is, which
// must be json.Marshal's writing, anything else as json.Marshal writes it
// (appendJSONValueOf).
func appendJSONValue(b []byte, v any) ([]byte, bool) {
	if raw, ok := v.(json.RawMessage); ok && len(raw) > 0 {
		return append(b, raw...), true
	}
	return appendJSONValueOf(b, v, 0)
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

// insertEvents writes events in the caller's transaction. Dispatchers are
// woken after the commit (eventsWritten): this process's at once, those of
// other processes by a NOTIFY sent after it (Options.AnnounceEvents), or
// else by their polling. A NOTIFY in the transaction itself would
// serialise every event-writing commit on the notification queue's lock.
func (s *Store) insertEvents(tx *gorm.DB, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	stampTrace(tx.Statement.Context, events)
	if s.dialect == SQLite {
		return s.insertNumberedEvents(tx, events)
	}
	args := make([]any, 0, eventInsert.cols*len(events))
	for i := range events {
		args = eventArgs(args, &events[i])
	}
	if err := s.insertRows(tx, eventInsert, args); err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	return nil
}

// numberEvents takes numbers for the change feed from SQLite's counter.
const numberEvents = "UPDATE change_counter SET seq = seq + ? WHERE id = 1 RETURNING seq"

// insertNumberedEvents is insertEvents on SQLite, which numbers the events
// for the change feed (changes.go) in the order given, from a counter that
// only grows: one statement takes len(events) numbers, and the inserts
// give the events theirs. The single writer commits in order, so the
// numbers are in commit order. (A trigger numbered them before, at two
// more writes an event.)
func (s *Store) insertNumberedEvents(tx *gorm.DB, events []Event) error {
	var last int64
	if err := s.queryWrite(tx, numberEvents, len(events)).Scan(&last); err != nil {
		return fmt.Errorf("number events: %w", err)
	}
	first := last - int64(len(events)) + 1
	args := make([]any, 0, sqliteEventInsert.cols*len(events))
	for i := range events {
		args = append(eventArgs(args, &events[i]), first+int64(i))
	}
	if err := s.insertRows(tx, sqliteEventInsert, args); err != nil {
		return fmt.Errorf("insert events: %w", err)
	}
	return nil
}

// eventsWritten wakes this process's dispatcher after a commit, and has
// those of other processes woken when the store announces events.
func (s *Store) eventsWritten() {
	s.wakeDispatcher()
	if s.announce != nil {
		select {
		case s.announce <- struct{}{}:
		default:
		}
	}
}

// wakeDispatcher signals EventWake, a signal already pending standing for
// this one, and wakes the change feed's readers (ChangesWake).
func (s *Store) wakeDispatcher() {
	s.changesWake.broadcast()
	select {
	case s.eventWake <- struct{}{}:
	default:
	}
}

// EventWake delivers a signal soon after events were committed by this
// process, or, once ListenEvents runs, announced by another.
func (s *Store) EventWake() <-chan struct{} { return s.eventWake }

// PendingEvents returns up to limit events not yet dispatched, oldest
// first, claimed or not. The dispatcher claims instead (ClaimEvents); this
// is for tests and tools that look at the outbox.
func (s *Store) PendingEvents(ctx context.Context, limit int) ([]Event, error) {
	var out []Event
	if err := s.r.WithContext(ctx).Where("dispatched_at IS NULL").Order("occurred_at, id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("pending events: %w", err)
	}
	return out, nil
}

// maxClaimTenants bounds the tenants one claim looks at; past it, a random
// window of them is served, so that every tenant's turn comes.
const maxClaimTenants = 1000

// Claim asks ClaimEvents for pending events.
type Claim struct {
	// Owner names the dispatcher; it must be unique to one process.
	Owner string
	// Limit is the most events to claim; each tenant with pending events
	// gets an equal share of it (at least one).
	Limit int
	// Lease is how long the claim holds: until then no other dispatcher
	// takes the events, after it anyone may (the owner died or hangs).
	Lease time.Duration
}

// ClaimEvents claims pending events that no live claim holds, fairly
// between tenants: every tenant with pending events gets an equal share of
// c.Limit, its oldest events first, so that one tenant's backlog delays
// another tenant's events by a round at most. The events come in turns
// between tenants (interleaveTenants). Dispatchers on PostgreSQL
// claim concurrently without waiting for each other (FOR UPDATE SKIP
// LOCKED) and never claim one event twice; SQLite's single writer does the
// same by itself.
func (s *Store) ClaimEvents(ctx context.Context, c Claim) ([]Event, error) {
	if c.Owner == "" || c.Limit < 1 || c.Lease <= 0 {
		return nil, fmt.Errorf("claim events: owner, a positive limit and a positive lease are required")
	}
	tenants, err := s.pendingTenants(ctx)
	if err != nil || len(tenants) == 0 {
		return nil, err
	}
	if len(tenants) > c.Limit {
		// More tenants wait than a round serves: a random window of them.
		i := rand.IntN(len(tenants))
		tenants = append(tenants[i:], tenants[:i]...)[:c.Limit]
	}
	per := (c.Limit + len(tenants) - 1) / len(tenants)
	now := s.now()
	until := now.Add(c.Lease)
	var out []Event
	if s.dialect == Postgres {
		// One statement: each tenant's oldest claimable events, skipping
		// rows another dispatcher is claiming at this moment.
		err = s.w.WithContext(ctx).Raw(`
			WITH picked AS (
				SELECT p.id FROM unnest(?::text[]) AS t(tenant_id)
				CROSS JOIN LATERAL (
					SELECT e.id FROM events e
					WHERE e.tenant_id = t.tenant_id AND e.dispatched_at IS NULL
					  AND (e.claimed_until IS NULL OR e.claimed_until < ?)
					ORDER BY e.occurred_at, e.id
					LIMIT ?
					FOR UPDATE SKIP LOCKED
				) p
			)
			UPDATE events SET claimed_by = ?, claimed_until = ?
			FROM picked WHERE events.id = picked.id
			RETURNING events.*`, pgTextArray(tenants), now, per, c.Owner, until).Scan(&out).Error
	} else {
		err = s.write(ctx, func(tx *gorm.DB) error {
			var ids []string
			for _, t := range tenants {
				var some []string
				if err := tx.Model(&Event{}).Where("tenant_id = ? AND dispatched_at IS NULL AND (claimed_until IS NULL OR claimed_until < ?)", t, now).
					Order("occurred_at, id").Limit(per).Pluck("id", &some).Error; err != nil {
					return err
				}
				ids = append(ids, some...)
			}
			if len(ids) == 0 {
				return nil
			}
			if err := tx.Model(&Event{}).Where("id IN ?", ids).Updates(map[string]any{"claimed_by": c.Owner, "claimed_until": until}).Error; err != nil {
				return err
			}
			return tx.Where("id IN ?", ids).Find(&out).Error
		})
	}
	if err != nil {
		return nil, fmt.Errorf("claim events: %w", err)
	}
	if out, err = s.holdBackLater(ctx, c.Owner, out); err != nil {
		return nil, fmt.Errorf("claim events: %w", err)
	}
	interleaveTenants(out)
	return out, nil
}

// holdBackLater releases, and leaves out of claimed, every claimed event of
// a record that has an earlier event still undispatched outside this
// claim: one claimed by another dispatcher, or not claimed at all. Earlier
// is in (record_version, occurred_at, id) order. So an event is handed out
// only once every earlier event of its record was marked dispatched, that
// is once that one's delivery started (or its sequencer was signalled),
// which is what lets an endpoint with ordering "record" receive a record's
// events in version order however many dispatchers share the outbox.
//
// It costs one query per round and applies to every event, whatever its
// endpoints' ordering: a hot record's later events may wait a round for an
// earlier one that another dispatcher holds, which delays them for an
// unordered endpoint too (by a round at most).
func (s *Store) holdBackLater(ctx context.Context, owner string, claimed []Event) ([]Event, error) {
	var ids []string
	for i := range claimed {
		if claimed[i].RecordID != "" {
			ids = append(ids, claimed[i].ID)
		}
	}
	if len(ids) == 0 {
		return claimed, nil
	}
	var held []string
	err := s.w.WithContext(ctx).Raw(`
		SELECT c.id FROM events c
		WHERE c.id IN ? AND EXISTS (
			SELECT 1 FROM events e
			WHERE e.record_id = c.record_id AND e.tenant_id = c.tenant_id AND e.dispatched_at IS NULL
			  AND e.id NOT IN ?
			  AND (e.record_version < c.record_version
			    OR (e.record_version = c.record_version AND (e.occurred_at < c.occurred_at
			      OR (e.occurred_at = c.occurred_at AND e.id < c.id)))))`, ids, ids).Scan(&held).Error
	if err != nil {
		return nil, fmt.Errorf("earlier events of the records: %w", err)
	}
	if len(held) == 0 {
		return claimed, nil
	}
	if err := s.ReleaseEvents(ctx, owner, held); err != nil {
		return nil, err
	}
	out := claimed[:0]
	for _, e := range claimed {
		if !slices.Contains(held, e.ID) {
			out = append(out, e)
		}
	}
	return out, nil
}

// interleaveTenants orders events as turns between tenants: every tenant's
// oldest, then every tenant's second oldest, and so on, oldest first
// within a turn; so that whoever starts them in order serves a tenant with
// one event as soon as one with many.
func interleaveTenants(evs []Event) {
	older := func(a, b *Event) bool {
		if !a.OccurredAt.Equal(b.OccurredAt) {
			return a.OccurredAt.Before(b.OccurredAt)
		}
		return a.ID < b.ID
	}
	sort.Slice(evs, func(i, j int) bool { return older(&evs[i], &evs[j]) })
	turn := make([]int, len(evs))
	seen := map[string]int{}
	for i := range evs {
		turn[i] = seen[evs[i].TenantID]
		seen[evs[i].TenantID]++
	}
	idx := make([]int, len(evs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return turn[idx[a]] < turn[idx[b]] })
	sorted := make([]Event, len(evs))
	for i, k := range idx {
		sorted[i] = evs[k]
	}
	copy(evs, sorted)
}

// pendingTenants returns the tenants that have undispatched events, up to
// maxClaimTenants, by walking the pending-events index from one tenant to
// the next (a loose index scan: one probe per tenant, however many events
// each has waiting).
func (s *Store) pendingTenants(ctx context.Context) ([]string, error) {
	var out []string
	err := s.r.WithContext(ctx).Raw(`
		WITH RECURSIVE t(tenant_id) AS (
			SELECT (SELECT tenant_id FROM events WHERE dispatched_at IS NULL ORDER BY tenant_id LIMIT 1)
			UNION ALL
			SELECT (SELECT e.tenant_id FROM events e WHERE e.dispatched_at IS NULL AND e.tenant_id > t.tenant_id ORDER BY e.tenant_id LIMIT 1)
			FROM t WHERE t.tenant_id IS NOT NULL
		)
		SELECT tenant_id FROM t WHERE tenant_id IS NOT NULL LIMIT ?`, maxClaimTenants).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("tenants with pending events: %w", err)
	}
	return out, nil
}

// ReleaseEvents gives up owner's claims on the events ids that are still
// pending, so that the next round of any dispatcher takes them at once
// instead of after the lease.
func (s *Store) ReleaseEvents(ctx context.Context, owner string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Model(&Event{}).Where("id IN ? AND claimed_by = ? AND dispatched_at IS NULL", ids, owner).
			Updates(map[string]any{"claimed_by": nil, "claimed_until": nil}).Error
	})
	if err != nil {
		return fmt.Errorf("release events: %w", err)
	}
	return nil
}

// ReleaseEventAfter gives up owner's claim on the pending event id, as
// ReleaseEvents does, and records that its deliveries were started to
// every endpoint up to after in id order (Event.FanoutAfter): the next
// round starts those after it.
func (s *Store) ReleaseEventAfter(ctx context.Context, owner, id, after string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Model(&Event{}).Where("id = ? AND claimed_by = ? AND dispatched_at IS NULL", id, owner).
			Updates(map[string]any{"claimed_by": nil, "claimed_until": nil, "fanout_after": after}).Error
	})
	if err != nil {
		return fmt.Errorf("release event %s: %w", id, err)
	}
	return nil
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

// pgArrayEscaper escapes an element of a PostgreSQL array literal.
var pgArrayEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// pgTextArray is a PostgreSQL text[] literal of ss, to bind as one
// parameter (GORM would expand a slice into a list of them).
func pgTextArray(ss []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(pgArrayEscaper.Replace(v))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// SubscribedEndpoints returns the tenant's endpoints that want an event of
// type t on module (see WebhookEndpoint.Subscribes), disabled ones
// included: the dispatcher delivers to the enabled ones and records the
// event as skipped for the others.
func (s *Store) SubscribedEndpoints(ctx context.Context, tenantID, t, moduleID string) ([]WebhookEndpoint, error) {
	var all []WebhookEndpoint
	if err := s.r.WithContext(ctx).Where("tenant_id = ?", tenantID).Find(&all).Error; err != nil {
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

// dispatchColumns are the endpoint columns the dispatcher reads: what
// chooses an event's endpoints and starts their deliveries, and the URL of
// a skipped delivery's row. Not the secrets, the custom headers or the
// health.
var dispatchColumns = []string{"id", "tenant_id", "url", "events", "module_ids", "retry_max", "enabled", "event_filter", "ordering"}

// DispatchEndpoints returns the endpoints of the tenants, disabled ones
// included, by tenant and then id, with only the columns that dispatching
// an event needs (dispatchColumns). A dispatcher round reads them once
// for all its events; each tenant has a bounded number of endpoints, each
// of bounded size.
func (s *Store) DispatchEndpoints(ctx context.Context, tenantIDs []string) ([]WebhookEndpoint, error) {
	if len(tenantIDs) == 0 {
		return nil, nil
	}
	var out []WebhookEndpoint
	if err := s.r.WithContext(ctx).Select(dispatchColumns).Where("tenant_id IN ?", tenantIDs).
		Order("tenant_id, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("endpoints to dispatch to: %w", err)
	}
	return out, nil
}

// eventAndEndpoint is a row of GetEventAndEndpoint: the event's columns
// prefixed ev_, the endpoint's ep_ (NULL when it does not exist).
type eventAndEndpoint struct {
	Event    Event           `gorm:"embedded;embeddedPrefix:ev_"`
	Endpoint WebhookEndpoint `gorm:"embedded;embeddedPrefix:ep_"`
}

// eventAndEndpointQuery is GetEventAndEndpoint's statement, built once
// from the two models' columns.
var eventAndEndpointQuery struct {
	once  sync.Once
	query string
	err   error
}

// GetEventAndEndpoint returns one of the tenant's events and one of its
// endpoints, read together in one statement: what a delivery attempt
// sends. When the event does not exist, or is another tenant's, it returns
// ErrNotFound and neither; when only the endpoint does not, it returns the
// event and ErrNotFound, so that callers tell the two apart by the event.
func (s *Store) GetEventAndEndpoint(ctx context.Context, tenantID, eventID, endpointID string) (*Event, *WebhookEndpoint, error) {
	q := &eventAndEndpointQuery
	q.once.Do(func() { q.query, q.err = s.eventAndEndpointQuery() })
	if q.err != nil {
		return nil, nil, fmt.Errorf("load event and endpoint: %w", q.err)
	}
	var rows []eventAndEndpoint
	if err := s.r.WithContext(ctx).Raw(q.query, endpointID, tenantID, eventID).Scan(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("load event and endpoint: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil, ErrNotFound
	}
	r := &rows[0]
	if r.Endpoint.ID == "" {
		return &r.Event, nil, ErrNotFound
	}
	return &r.Event, &r.Endpoint, nil
}

// eventAndEndpointQuery selects every column of an event and of the
// endpoint of the same tenant joined to it, under the prefixes of
// eventAndEndpoint. The join names the tenant on both sides: another
// tenant's endpoint id finds nothing, as GetEndpoint's does.
func (s *Store) eventAndEndpointQuery() (string, error) {
	var cols []string
	for _, m := range []struct {
		model         any
		alias, prefix string
	}{{&Event{}, "e", "ev_"}, {&WebhookEndpoint{}, "w", "ep_"}} {
		stmt := &gorm.Statement{DB: s.r}
		if err := stmt.Parse(m.model); err != nil {
			return "", err
		}
		for _, name := range stmt.Schema.DBNames {
			cols = append(cols, m.alias+"."+name+" AS "+m.prefix+name)
		}
	}
	return "SELECT " + strings.Join(cols, ", ") + ` FROM events e
		LEFT JOIN webhook_endpoints w ON w.tenant_id = e.tenant_id AND w.id = ?
		WHERE e.tenant_id = ? AND e.id = ?`, nil
}
