package models

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// The change feed lists a module's record events in the order their
// transactions committed, for readers that page through it or follow it
// live, and never skips one.
//
// A position is (txid, seq). On PostgreSQL txid is the writing
// transaction's id and seq comes from a sequence (migration 00019). Ids
// and sequence numbers are taken when a row is written, not when it
// commits, so an event may commit after one with a larger position. A read
// therefore lists only events whose txid is below the xmin of its own
// snapshot: every transaction below it has ended, so no event can appear
// later at a position before those read, and a reader that goes on from
// the last position it read misses nothing. An event of a transaction
// still open, or of one that ended after a transaction that is still open
// began, waits for that one to end. A record's changes come out in
// version order because every change of an existing record takes the
// record's lock before its transaction's first write (lockForChange), so
// the later change has the larger txid.
//
// On SQLite one writer commits in order, and the store numbers events in
// that order from a counter (seq); txid is 0.

// ChangeTypes are the event types the change feed lists: a module's record
// events. Operational events have no module, and a resync's snapshots are
// for their endpoint alone.
var ChangeTypes = []string{EventRecordCreated, EventRecordUpdated, EventStatusChange, EventCustomDataUpdated, EventRecordDeleted}

// ChangePosition is a place in a module's change feed: the changes after
// it are those not yet read. The zero position is before every change.
type ChangePosition struct {
	Txid int64
	Seq  int64
}

// Less reports whether p comes before q.
func (p ChangePosition) Less(q ChangePosition) bool {
	return p.Txid < q.Txid || p.Txid == q.Txid && p.Seq < q.Seq
}

// Cursor is p as the API hands it out: opaque to clients.
func (p ChangePosition) Cursor() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.Txid, 10) + "." + strconv.FormatInt(p.Seq, 10)))
}

// ParseChangeCursor reads a cursor that Cursor wrote.
func ParseChangeCursor(s string) (ChangePosition, error) {
	bad := Errorf(KindInvalid, "after is not a cursor the change feed answered; pass a cursor exactly as it was given, after=latest, or no after to start at the oldest change kept")
	if len(s) > 64 {
		return ChangePosition{}, bad
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return ChangePosition{}, bad
	}
	t, q, ok := strings.Cut(string(b), ".")
	if !ok {
		return ChangePosition{}, bad
	}
	txid, err1 := strconv.ParseInt(t, 10, 64)
	seq, err2 := strconv.ParseInt(q, 10, 64)
	if err1 != nil || err2 != nil || txid < 0 || seq < 0 || strconv.FormatInt(txid, 10) != t || strconv.FormatInt(seq, 10) != q {
		return ChangePosition{}, bad
	}
	return ChangePosition{Txid: txid, Seq: seq}, nil
}

// Change is one event of the change feed.
type Change struct {
	Position      ChangePosition
	ID            string
	RecordID      string
	RecordVersion int64
	Type          string
	// Payload is the event's webhook body, as stored.
	Payload string
}

// MaxChangesPage bounds the changes one read returns.
const MaxChangesPage = 1000

// Changes returns up to limit of the module's changes after position
// after, in commit order (see the top of this file). It reads nothing of
// a module that is not the tenant's. It does not check after against
// retention: see CheckChangeCursor.
func (s *Store) Changes(ctx context.Context, tenantID, moduleID string, after ChangePosition, limit int) ([]Change, error) {
	limit = min(max(limit, 1), MaxChangesPage)
	var query string
	args := []any{moduleID, tenantID, after.Txid, after.Seq, limit}
	if s.dialect == Postgres {
		query = `SELECT txid, seq, id, record_id, record_version, type, payload FROM events
			WHERE module_id = ? AND tenant_id = ? AND type <> 'record_snapshot'
			  AND (txid, seq) > (?, ?)
			  AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
			ORDER BY txid, seq LIMIT ?`
	} else {
		query = `SELECT 0, seq, id, record_id, record_version, type, payload FROM events
			WHERE module_id = ? AND tenant_id = ? AND type <> 'record_snapshot'
			  AND seq > ?
			ORDER BY seq LIMIT ?`
		if after.Txid != 0 {
			// A PostgreSQL cursor shown to SQLite: past every change.
			return nil, nil
		}
		args = []any{moduleID, tenantID, after.Seq, limit}
	}
	rows, err := s.query(ctx, query, true, args...)
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	defer rows.Close()
	out := make([]Change, 0, min(limit, 64))
	for rows.Next() {
		var c Change
		if err := rows.Scan(&c.Position.Txid, &c.Position.Seq, &c.ID, &c.RecordID, &c.RecordVersion, &c.Type, &c.Payload); err != nil {
			return nil, fmt.Errorf("scan change: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	return out, nil
}

// LatestChange returns the position at the end of the module's feed now:
// that of its last change that a read would list, or the newest purged
// one's when that is later, or the zero position.
func (s *Store) LatestChange(ctx context.Context, tenantID, moduleID string) (ChangePosition, error) {
	var query string
	if s.dialect == Postgres {
		query = `SELECT txid, seq FROM events
			WHERE module_id = ? AND tenant_id = ? AND type <> 'record_snapshot' AND txid IS NOT NULL AND seq IS NOT NULL
			  AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
			ORDER BY txid DESC, seq DESC LIMIT 1`
	} else {
		query = `SELECT 0, seq FROM events
			WHERE module_id = ? AND tenant_id = ? AND type <> 'record_snapshot' AND seq IS NOT NULL
			ORDER BY seq DESC LIMIT 1`
	}
	var p ChangePosition
	rows, err := s.query(ctx, query, true, moduleID, tenantID)
	if err != nil {
		return p, fmt.Errorf("latest change: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&p.Txid, &p.Seq); err != nil {
			return p, fmt.Errorf("latest change: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return p, fmt.Errorf("latest change: %w", err)
	}
	h, err := s.changeHorizon(ctx, moduleID)
	if err != nil {
		return p, err
	}
	if p.Less(h) {
		p = h
	}
	return p, nil
}

// changeHorizon returns the position of the newest of the module's changes
// that retention purged, or the zero position.
func (s *Store) changeHorizon(ctx context.Context, moduleID string) (ChangePosition, error) {
	var h ChangePosition
	rows, err := s.query(ctx, "SELECT txid, seq FROM change_horizons WHERE module_id = ?", true, moduleID)
	if err != nil {
		return h, fmt.Errorf("change horizon: %w", err)
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&h.Txid, &h.Seq); err != nil {
			return h, fmt.Errorf("change horizon: %w", err)
		}
	}
	return h, rows.Err()
}

// ErrCursorExpired answers a cursor before changes that retention purged.
var ErrCursorExpired = &Error{Kind: KindCursorExpired, Message: "the cursor is older than the change feed keeps: changes after it were purged. " +
	"Start over: read the module's records (or resync a webhook endpoint), then follow the feed from after=latest; or read from the oldest change kept, without after"}

// CheckChangeCursor returns ErrCursorExpired when changes after p were
// purged: p is before the newest purged change. The zero position, the
// start of what is kept, never expires.
func (s *Store) CheckChangeCursor(ctx context.Context, moduleID string, p ChangePosition) error {
	if p == (ChangePosition{}) {
		return nil
	}
	h, err := s.changeHorizon(ctx, moduleID)
	if err != nil {
		return err
	}
	if p.Less(h) {
		return ErrCursorExpired
	}
	return nil
}

// purgeHorizon moves, in the purge's transaction, each module's horizon
// to the newest change among the events a purge batch deletes; it takes
// the txid column's expression (SQLite has none) and the condition that
// selects the batch (idsIn).
const purgeHorizon = `INSERT INTO change_horizons (module_id, txid, seq)
	SELECT module_id, txid, seq FROM (
		SELECT module_id, %[1]s AS txid, seq,
			ROW_NUMBER() OVER (PARTITION BY module_id ORDER BY %[1]s DESC, seq DESC) AS n
		FROM events WHERE %[2]s AND module_id <> '' AND type <> 'record_snapshot' AND seq IS NOT NULL) AS newest
	WHERE n = 1
	ON CONFLICT (module_id) DO UPDATE SET txid = excluded.txid, seq = excluded.seq
	WHERE change_horizons.txid < excluded.txid OR (change_horizons.txid = excluded.txid AND change_horizons.seq < excluded.seq)`

// ChangeFilter selects changes: by type (none: every type), and by the
// record's fields and times as the records list's filters do.
type ChangeFilter struct {
	Types []string
	// Fields and Times are RecordQuery's.
	Fields map[string]any
	Times  []TimeCond
}

// ChangeRecord is the record a change's payload shows, as a filter reads
// it: numbers as json.Number.
type ChangeRecord struct {
	Fields    map[string]any `json:"fields"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// DecodeChangeRecord reads the record of a change's payload.
func DecodeChangeRecord(payload string) (*ChangeRecord, error) {
	var body struct {
		Record ChangeRecord `json:"record"`
	}
	d := json.NewDecoder(strings.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&body); err != nil {
		return nil, fmt.Errorf("decode change: %w", err)
	}
	return &body.Record, nil
}

// NeedsRecord reports whether Matches reads the record: a filter on type
// alone does not.
func (f ChangeFilter) NeedsRecord() bool { return len(f.Fields) > 0 || len(f.Times) > 0 }

// Matches reports whether a change of type typ, of record r (nil when
// NeedsRecord is false), passes the filter. A status_change shows the
// record after the change, a record_deleted the record as it was.
func (f ChangeFilter) Matches(typ string, r *ChangeRecord) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, typ) {
		return false
	}
	if !f.NeedsRecord() {
		return true
	}
	if r == nil || !EndpointFilter(f.Fields).Matches(r.Fields) {
		return false
	}
	for _, c := range f.Times {
		at := r.CreatedAt
		if c.Column == "updated_at" {
			at = r.UpdatedAt
		}
		if !timeHolds(c, at) {
			return false
		}
	}
	return true
}

// timeHolds is timeCond's comparison in Go, to the microsecond that
// records' times are stored with.
func timeHolds(c TimeCond, at time.Time) bool {
	return compareHolds(c.Op, at.UTC().Truncate(time.Microsecond).Compare(c.At.UTC()))
}

// idsIn is the condition that id is one of ids, bound as one parameter
// whatever their number, and that parameter.
func (s *Store) idsIn(ids []string) (string, any) {
	if s.dialect == Postgres {
		return "id = ANY(CAST(? AS text[]))", pgTextArray(ids)
	}
	b, _ := json.Marshal(ids)
	return "id IN (SELECT value FROM json_each(?))", string(b)
}

// purgeEvents deletes, in tx, one batch of events dispatched before
// before, moving the change feed's horizons past those it deletes.
func (s *Store) purgeEvents(tx *gorm.DB, before time.Time, batch int) (int64, error) {
	var ids []string
	if err := tx.Raw(`SELECT id FROM events WHERE dispatched_at IS NOT NULL AND dispatched_at < ?
		ORDER BY dispatched_at LIMIT ?`, before, batch).Scan(&ids).Error; err != nil {
		return 0, fmt.Errorf("events to purge: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	cond, arg := s.idsIn(ids)
	txid := "0"
	if s.dialect == Postgres {
		txid = "COALESCE(txid, 0)"
	}
	if err := tx.Exec(fmt.Sprintf(purgeHorizon, txid, cond), arg).Error; err != nil {
		return 0, fmt.Errorf("change horizons: %w", err)
	}
	res := tx.Exec("DELETE FROM events WHERE "+cond, arg)
	if res.Error != nil {
		return 0, res.Error
	}
	return res.RowsAffected, nil
}
