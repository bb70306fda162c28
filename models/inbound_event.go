package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/recordhub/recordhub/models/mapping"
)

// Inbound call actions.
const (
	InboundCreated = "created"
	InboundUpdated = "updated"
)

// MaxInboundBody is the largest inbound body accepted and kept.
const MaxInboundBody = 1 << 20

// InboundEvent is one call that reached an inbound webhook: what was sent
// and what came of it. Calls to unknown URLs have no webhook and are in the
// access log only.
type InboundEvent struct {
	ID        string `gorm:"primaryKey"`
	TenantID  string
	ModuleID  string
	WebhookID string
	RequestID string
	// Status is the HTTP status of the answer.
	Status   int
	Action   *string
	RecordID *string
	// Error is the error code of a failed call, ErrorMessage and
	// ErrorDetails what its answer said.
	Error         string
	ErrorMessage  string
	ErrorDetails  FieldErrors `gorm:"type:text"`
	Headers       Headers     `gorm:"type:text"`
	Body          string
	BodySize      int
	BodyTruncated bool
	IP            string `gorm:"column:ip"`
	// DeliveryID is the sender's id of the call, if it sent one;
	// DuplicateOf names the applied call that this one repeats; ReplayOf
	// the kept call whose body an admin replayed.
	DeliveryID  *string
	DuplicateOf *string
	ReplayOf    *string
	ReceivedAt  time.Time
}

// storable makes the event's text columns storable (StorableText), in
// place: they hold what the sender sent, and answers that may quote it.
func (ev *InboundEvent) storable() {
	ev.RequestID, ev.IP = StorableText(ev.RequestID, 0), StorableText(ev.IP, 0)
	ev.Error, ev.ErrorMessage = StorableText(ev.Error, 0), StorableText(ev.ErrorMessage, 0)
	ev.ErrorDetails = storableFieldErrors(ev.ErrorDetails)
	ev.Headers = storableHeaders(ev.Headers)
	ev.Body = StorableText(ev.Body, MaxInboundBody)
	if ev.DeliveryID != nil {
		id := StorableText(*ev.DeliveryID, 0)
		ev.DeliveryID = &id
	}
}

// SetError records a failed call's error on the event.
func (ev *InboundEvent) SetError(status int, code, message string, details []FieldError) {
	ev.Status, ev.Error, ev.ErrorMessage, ev.ErrorDetails = status, code, message, details
	ev.Action, ev.RecordID, ev.DuplicateOf = nil, nil, nil
}

// errDeliveryRace makes ApplyInbound look again after a concurrent call
// with the same delivery id was applied first.
var errDeliveryRace = errors.New("delivery applied concurrently")

// matchCond is one match field's value in a payload.
type matchCond struct {
	column, name string
	value        any
}

// ApplyInbound maps payload, the decoded body of a call to w, into a record
// of w's module: with match fields, the oldest record whose values equal
// the payload's is updated (a merge), otherwise a record is created. The
// record, its outbound events and ev, completed with the outcome, are
// written in one transaction. A payload that cannot make a valid record
// returns a mapping_failed error whose details name the rule and field;
// ev is then left for RecordInboundEvent.
//
// Concurrent calls with equal match values are serialised so that they
// never create two records: SQLite has one writer, and PostgreSQL takes a
// transaction-scoped advisory lock on the module and the values before it
// looks for a match.
//
// A call whose ev.DeliveryID was applied before (a sender's retry) writes
// nothing but ev, as a duplicate of the first call with its record and
// action; ApplyInbound then returns a nil record.
func (s *Store) ApplyInbound(ctx context.Context, w *InboundWebhook, payload any, ev *InboundEvent) (*Record, error) {
	m, err := s.GetModule(ctx, w.TenantID, w.ModuleID)
	if err != nil {
		return nil, err
	}
	mp, problems := mapping.Compile(w.Mapping)
	if len(problems) > 0 {
		return nil, fmt.Errorf("stored mapping of %s is invalid: %s", w.ID, problems[0].Message)
	}
	vals := mp.Apply(payload)
	match, err := matchConds(mp, w.MatchFields, vals)
	if err != nil {
		return nil, err
	}
	for range 10 {
		rec, changed, err := s.applyInboundOnce(ctx, m, vals, match, ev)
		if errors.Is(err, errVersionRace) || errors.Is(err, errDeliveryRace) {
			continue
		}
		if err != nil {
			return nil, mappingFailed(err, mp)
		}
		if changed {
			s.eventsWritten()
		}
		return rec, nil
	}
	return nil, Errorf(KindConflict, "the matching record is being changed by others; try again")
}

func (s *Store) applyInboundOnce(ctx context.Context, m *Module, vals mapping.Values, match []matchCond, ev *InboundEvent) (*Record, bool, error) {
	var (
		rec     *Record
		changed bool
		action  string
	)
	err := s.write(ctx, func(tx *gorm.DB) error {
		rec, changed, action = nil, false, ""
		ev.DuplicateOf = nil
		if ev.DeliveryID != nil {
			var first InboundEvent
			err := tx.Where("webhook_id = ? AND delivery_id = ? AND duplicate_of IS NULL AND status = 202", ev.WebhookID, *ev.DeliveryID).Take(&first).Error
			if err == nil {
				ev.Status, ev.Action, ev.RecordID, ev.DuplicateOf = 202, first.Action, first.RecordID, &first.ID
				ev.Error, ev.ErrorMessage, ev.ErrorDetails = "", "", nil
				return s.insertInboundEvent(tx, ev)
			}
			if !errors.Is(err, gorm.ErrRecordNotFound) {
				return fmt.Errorf("find earlier delivery: %w", err)
			}
		}
		var err error
		if len(match) > 0 {
			if rec, err = s.findMatch(tx, m, match); err != nil {
				return err
			}
		}
		if rec != nil {
			action = InboundUpdated
			changed, err = s.patchRecordTx(tx, m, rec, RecordPatch{Fields: vals.Fields, CustomData: vals.CustomData})
			if err != nil {
				return err
			}
		} else {
			action, changed = InboundCreated, true
			r, events, err := s.newRecord(m, withoutNulls(vals.Fields), withoutNulls(vals.CustomData))
			if err != nil {
				return err
			}
			if err := s.insertRecordTx(tx, r, events); err != nil {
				return err
			}
			rec = r
		}
		ev.Status, ev.Action, ev.RecordID = 202, &action, &rec.ID
		ev.Error, ev.ErrorMessage, ev.ErrorDetails = "", "", nil
		err = s.insertInboundEvent(tx, ev)
		if ev.DeliveryID != nil && isUniqueViolation(err) {
			return errDeliveryRace
		}
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return rec, changed, nil
}

// findMatch returns the oldest record of m whose values equal match, or
// nil; on PostgreSQL it first takes the advisory lock of those values.
func (s *Store) findMatch(tx *gorm.DB, m *Module, match []matchCond) (*Record, error) {
	if s.dialect == Postgres {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", matchLockKey(m.ID, match)).Error; err != nil {
			return nil, fmt.Errorf("lock match: %w", err)
		}
	}
	q := tx.Where("module_id = ? AND tenant_id = ?", m.ID, m.TenantID)
	for _, c := range match {
		cond, args, err := s.filterOn(c.column, c.name, c.value)
		if err != nil {
			return nil, err
		}
		q = q.Where(cond, args...)
	}
	var r Record
	err := q.Order("created_at ASC, id ASC").Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find matching record: %w", err)
	}
	return &r, nil
}

// matchLockKey is the advisory lock of one module and match values.
// Numbers are hashed by value, as the match compares them, so that 42,
// 42.0 and 4.2e1 take one lock. Different values that collide only wait
// for each other.
func matchLockKey(moduleID string, match []matchCond) int64 {
	h := fnv.New64a()
	h.Write([]byte(moduleID))
	for _, c := range match {
		v := fmt.Sprintf("%T:%v", c.value, c.value)
		if n, ok := c.value.(json.Number); ok {
			// Equal numbers round to one float64; numbers that differ
			// only beyond its precision share a lock, which is harmless.
			// (big.Rat would be exact, and would expand 1e999999999.)
			f, _ := strconv.ParseFloat(n.String(), 64)
			v = "number:" + strconv.FormatFloat(f, 'g', -1, 64)
		}
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s", c.column, c.name, v)
	}
	return int64(h.Sum64())
}

// matchConds reads the match fields' values from a payload's values; each
// must be present and a string, number or boolean.
func matchConds(mp *mapping.Mapping, matchFields []string, vals mapping.Values) ([]matchCond, error) {
	var (
		conds []matchCond
		errs  []FieldError
	)
	for _, name := range matchFields {
		t, err := mapping.ParseTarget(name)
		if err != nil {
			return nil, fmt.Errorf("stored match field %q: %w", name, err)
		}
		column, field := "fields", "fields."+t.Name
		if t.Custom {
			column, field = "custom_data", "custom_data."+t.Name
		}
		detail := ruleDetail(mp, t, FieldError{Field: field})
		v, ok := vals.Get(t)
		switch v.(type) {
		case string, json.Number, bool:
			if detail.Message = unstorable(v); detail.Message == "" {
				conds = append(conds, matchCond{column: column, name: t.Name, value: v})
				continue
			}
		case nil:
			detail.Message = "is a match field, and the payload has no value for it"
			if ok {
				detail.Message = "is a match field, and the payload's value for it is null"
			}
		default:
			detail.Message = "is a match field, and its value must be a string, number or boolean"
		}
		errs = append(errs, detail)
	}
	if len(errs) > 0 {
		return nil, &Error{Kind: KindMappingFailed, Message: "the payload cannot be matched to a record", Details: errs}
	}
	return conds, nil
}

// mappingFailed turns the validation error of a mapped record into a
// mapping_failed error whose details name the rule of each field.
func mappingFailed(err error, mp *mapping.Mapping) error {
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindValidation {
		return err
	}
	details := make([]FieldError, len(e.Details))
	for i, d := range e.Details {
		details[i] = d
		if name, ok := strings.CutPrefix(d.Field, "fields."); ok {
			details[i] = ruleDetail(mp, mapping.Target{Name: name}, d)
		} else if key, ok := strings.CutPrefix(d.Field, "custom_data."); ok {
			details[i] = ruleDetail(mp, mapping.Target{Custom: true, Name: key}, d)
		}
	}
	return &Error{Kind: KindMappingFailed, Message: "the payload does not map to a valid record", Details: details}
}

// ruleDetail names in d the rule of mp that writes t, if any.
func ruleDetail(mp *mapping.Mapping, t mapping.Target, d FieldError) FieldError {
	if i := mp.RuleFor(t); i >= 0 {
		d.Rule, d.Source = &i, mp.Rules()[i].Source
	}
	return d
}

// withoutNulls copies m without its null values: on creation a null
// sets nothing.
func withoutNulls(m map[string]any) map[string]any {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(_ string, v any) bool { return v == nil })
	return out
}

func (s *Store) insertInboundEvent(tx *gorm.DB, ev *InboundEvent) error {
	ev.storable()
	if ev.Headers == nil {
		ev.Headers = Headers{}
	}
	if err := tx.Create(ev).Error; err != nil {
		return fmt.Errorf("insert inbound event: %w", err)
	}
	return nil
}

// RecordInboundEvent keeps a call that did not reach ApplyInbound's
// commit: refused, unsigned or unmappable.
func (s *Store) RecordInboundEvent(ctx context.Context, ev *InboundEvent) error {
	return s.write(ctx, func(tx *gorm.DB) error { return s.insertInboundEvent(tx, ev) })
}

// InboundDelivery tells what became of the earlier calls to webhook
// webhookID that carried deliveryID: applied is the call that applied it,
// nil when none did, and seen whether any call carrying it was kept.
func (s *Store) InboundDelivery(ctx context.Context, webhookID, deliveryID string) (applied *InboundEvent, seen bool, err error) {
	var first InboundEvent
	err = s.r.WithContext(ctx).Where("webhook_id = ? AND delivery_id = ? AND duplicate_of IS NULL AND status = 202", webhookID, deliveryID).Take(&first).Error
	if err == nil {
		return &first, true, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, fmt.Errorf("find applied delivery: %w", err)
	}
	var ids []string
	err = s.r.WithContext(ctx).Model(&InboundEvent{}).Where("webhook_id = ? AND delivery_id = ?", webhookID, deliveryID).Limit(1).Pluck("id", &ids).Error
	if err != nil {
		return nil, false, fmt.Errorf("find delivery: %w", err)
	}
	return nil, len(ids) > 0, nil
}

// Replayable reports whether a kept call can be applied again: only a call
// whose whole body was read and whose signature passed (its status says
// it got past those checks).
func (ev *InboundEvent) Replayable() bool {
	switch ev.Status {
	case 202, 400, 409, 422, 500:
		return !ev.BodyTruncated
	}
	return false
}

// GetInboundEvent returns one call kept for one of the tenant's modules.
func (s *Store) GetInboundEvent(ctx context.Context, tenantID, moduleID, id string) (*InboundEvent, error) {
	var ev InboundEvent
	if err := s.r.WithContext(ctx).Where("id = ? AND module_id = ? AND tenant_id = ?", id, moduleID, tenantID).Take(&ev).Error; err != nil {
		return nil, notFoundOr(err, "load inbound event")
	}
	return &ev, nil
}

// InboundEventQuery asks for a page of a module's inbound calls.
type InboundEventQuery struct {
	// Page is the page to read; with After, only its Limit counts.
	Page Page
	// After, when set, reads the calls after this position (a previous
	// page's last call) instead of skipping Page's offset.
	After *Position
	// CountUpTo, when above 0, bounds the count: the total answered is
	// at most CountUpTo+1, and above CountUpTo means "more than that".
	CountUpTo int64
}

// ListInboundEvents returns a page of the calls a module's inbound webhook
// received, newest first (received_at, then id), and how many it received.
func (s *Store) ListInboundEvents(ctx context.Context, tenantID, moduleID string, p InboundEventQuery) ([]InboundEvent, int64, error) {
	if _, err := s.GetModule(ctx, tenantID, moduleID); err != nil {
		return nil, 0, err
	}
	q := s.r.WithContext(ctx).Model(&InboundEvent{}).Where("tenant_id = ? AND module_id = ?", tenantID, moduleID)
	total, err := s.count(ctx, q, p.CountUpTo)
	if err != nil {
		return nil, 0, fmt.Errorf("count inbound events: %w", err)
	}
	var out []InboundEvent
	err = page(q, "received_at", p.Page, p.After).Find(&out).Error
	if err != nil {
		return nil, 0, fmt.Errorf("list inbound events: %w", err)
	}
	return out, total, nil
}
