package models

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// PrefixResync starts a resync's id.
const PrefixResync = "rsy_"

// EventRecordSnapshot is the event type of a resync: a record as it was
// when the resync started, sent to the one endpoint that asked for it.
// It is never written to the outbox for dispatch.
const EventRecordSnapshot = "record_snapshot"

// Resync states, those of recoveries.
const (
	ResyncRunning   = RecoveryRunning
	ResyncCompleted = RecoveryCompleted
	ResyncFailed    = RecoveryFailed
)

// WebhookResync is one resync of an endpoint: a Resync workflow that sends
// every current record of the endpoint's modules as a record_snapshot event
// as of one outbox position (Position), after which the endpoint's live
// events carry on. Its counts are written after each page.
type WebhookResync struct {
	BulkJob
	// Position is the outbox position the resync is taken at, opaque:
	// on SQLite the last event's rowid, on PostgreSQL a snapshot
	// (pg_current_snapshot()). Events committed after it are live.
	Position string
	// Total is how many records the endpoint's modules held when the
	// resync started: what the progress runs towards.
	Total int
	// Examined counts the records read so far; Sent those sent as a
	// snapshot; Covered those left to their live events, because an event
	// of theirs the endpoint subscribes to was committed after Position.
	Examined, Sent, Covered int
}

// Progress is the resync's counts as its row holds them.
func (r *WebhookResync) Progress() ResyncProgress {
	return ResyncProgress{Examined: r.Examined, Sent: r.Sent, Covered: r.Covered}
}

// ResyncProgress is what a resync has done so far; totals, not increments.
type ResyncProgress struct {
	Examined int `json:"examined"`
	Sent     int `json:"sent"`
	Covered  int `json:"covered"`
}

// columns are the progress as the resync's row stores it.
func (p ResyncProgress) columns() map[string]any {
	return map[string]any{"examined": p.Examined, "sent": p.Sent, "covered": p.Covered}
}

// ResyncRunningError refuses a resync of an endpoint that has one running
// already; it is a conflict, and names the running one.
type ResyncRunningError struct {
	Running *WebhookResync
}

func (e *ResyncRunningError) Error() string { return e.conflict().Message }

// Unwrap makes the refusal a KindConflict *Error.
func (e *ResyncRunningError) Unwrap() error { return e.conflict() }

// RunningJob is the running resync the refusal names.
func (e *ResyncRunningError) RunningJob() *BulkJob { return &e.Running.BulkJob }

func (e *ResyncRunningError) conflict() *Error { return runningConflict(BulkResync, e.Running.ID) }

// CreateResync records a new running resync of endpoint e, asked for at
// asOf, numbered with the endpoint's next resync number, with the workflow
// id workflowID derives from it (see insertBulk), the outbox position it
// is taken at and the number of records it will go through. The position
// is read in the transaction that writes the row. An endpoint with a
// running resync gets *ResyncRunningError naming it (see claimBulk; a
// resync is not tried again); a tenant that runs as many resyncs and
// recoveries as its bound, *TenantBulkError naming them.
func (s *Store) CreateResync(ctx context.Context, e *WebhookEndpoint, asOf time.Time, workflowID func(n int) string) (*WebhookResync, error) {
	mods, err := s.resyncModules(ctx, e)
	if err != nil {
		return nil, err
	}
	return claimBulk(1, BulkResync,
		func() (*WebhookResync, error) {
			r := &WebhookResync{BulkJob: BulkJob{ID: NewID(PrefixResync), TenantID: e.TenantID, EndpointID: e.ID, Status: ResyncRunning, StartedAt: asOf.UTC()}}
			if err := s.insertBulk(ctx, e, BulkResync, &r.BulkJob, r, workflowID, func(tx *gorm.DB) error { return s.fillResync(tx, r, mods) }); err != nil {
				return nil, err
			}
			return r, nil
		},
		func() (*WebhookResync, error) { return s.RunningResync(ctx, e.TenantID, e.ID) },
		func(r *WebhookResync) error { return &ResyncRunningError{Running: r} })
}

// fillResync sets, in the transaction that records r, the outbox position
// r is taken at and how many records of mods it will go through.
func (s *Store) fillResync(tx *gorm.DB, r *WebhookResync, mods []Module) error {
	pos, err := s.outboxPosition(tx)
	if err != nil {
		return err
	}
	r.Position = pos
	if len(mods) == 0 {
		return nil
	}
	ids := make([]string, len(mods))
	for i, m := range mods {
		ids[i] = m.ID
	}
	if err := tx.Raw("SELECT COALESCE(SUM(count), 0) FROM module_record_counts WHERE module_id IN ?", ids).Scan(&r.Total).Error; err != nil {
		return fmt.Errorf("records to resync: %w", err)
	}
	return nil
}

// outboxPosition is the position of the last event committed, read in tx:
// on SQLite the largest rowid of events (one writer, each new row gets the
// largest rowid plus one: rowid order is commit order); on PostgreSQL a
// snapshot, which tells committed transactions from those to come.
func (s *Store) outboxPosition(tx *gorm.DB) (string, error) {
	if s.dialect == Postgres {
		var snap string
		if err := tx.Raw("SELECT pg_current_snapshot()::text").Scan(&snap).Error; err != nil {
			return "", fmt.Errorf("outbox position: %w", err)
		}
		return snap, nil
	}
	var rowid int64
	if err := tx.Raw("SELECT COALESCE(MAX(rowid), 0) FROM events").Scan(&rowid).Error; err != nil {
		return "", fmt.Errorf("outbox position: %w", err)
	}
	return strconv.FormatInt(rowid, 10), nil
}

// committedAfter is a condition on events e: committed after position
// pos. It returns the SQL and its arguments.
func (s *Store) committedAfter(pos string) (string, []any, error) {
	if s.dialect == Postgres {
		// Transactions below the snapshot's xmin are all visible: the
		// index on (record_id, txid) skips them.
		return "e.txid IS NOT NULL AND e.txid >= pg_snapshot_xmin(?::pg_snapshot)::text::bigint AND NOT pg_visible_in_snapshot(e.txid::text::xid8, ?::pg_snapshot)",
			[]any{pos, pos}, nil
	}
	n, err := strconv.ParseInt(pos, 10, 64)
	if err != nil {
		return "", nil, fmt.Errorf("outbox position %q is not one of SQLite's", pos)
	}
	return "e.rowid > ?", []any{n}, nil
}

// resyncModules returns the modules a resync of e goes through, in id
// order: the endpoint's modules, or all of the tenant's.
func (s *Store) resyncModules(ctx context.Context, e *WebhookEndpoint) ([]Module, error) {
	q := s.r.WithContext(ctx).Select("id, slug").Where("tenant_id = ?", e.TenantID)
	if len(e.ModuleIDs) > 0 {
		q = q.Where("id IN ?", []string(e.ModuleIDs))
	}
	var mods []Module
	if err := q.Order("id").Find(&mods).Error; err != nil {
		return nil, fmt.Errorf("modules to resync: %w", err)
	}
	return mods, nil
}

// RunningResync returns the endpoint's running resync, ErrNotFound when
// none runs.
func (s *Store) RunningResync(ctx context.Context, tenantID, endpointID string) (*WebhookResync, error) {
	return takeBulk[WebhookResync](ctx, s, "load running resync", "status = ?", tenantID, endpointID, ResyncRunning)
}

// GetResync returns one of the tenant's resyncs of an endpoint.
func (s *Store) GetResync(ctx context.Context, tenantID, endpointID, id string) (*WebhookResync, error) {
	return takeBulk[WebhookResync](ctx, s, "load resync", "id = ?", tenantID, endpointID, id)
}

// SetResyncProgress writes a running resync's counts (totals).
func (s *Store) SetResyncProgress(ctx context.Context, id string, p ResyncProgress) error {
	return s.setBulkCounts(ctx, &WebhookResync{}, BulkResync, id, p.columns())
}

// FinishResync ends a resync as completed or failed (with why) at at, with
// its final counts. Finishing a finished resync changes nothing.
func (s *Store) FinishResync(ctx context.Context, id, status string, p ResyncProgress, why string, at time.Time) error {
	return s.finishBulk(ctx, &WebhookResync{}, BulkResync, id, status, p.columns(), why, at)
}

// ResyncCursor is where a resync's pages stand: the last record sent or
// passed, and its module. Modules are gone through in id order, each one's
// records in id order.
type ResyncCursor struct {
	ModuleID string `json:"module_id"`
	RecordID string `json:"record_id"`
}

// ResyncPageQuery asks for one page of a resync.
type ResyncPageQuery struct {
	Endpoint *WebhookEndpoint
	Position string
	After    ResyncCursor
	Limit    int
}

// ResyncCandidate is a record of a resync's page.
type ResyncCandidate struct {
	Record Record
	Module Module
	// Covered: an event of the record that the endpoint subscribes to was
	// committed after the resync's position. Its live events carry the
	// whole record after each change (before it, for a deletion), so a
	// snapshot would send a version twice: it is not sent.
	Covered bool
}

// ResyncPage returns up to q.Limit records of the endpoint's modules after
// q.After, in module then record id order, each read with whether it is
// covered by live events, in one statement per module: a record and the
// events it is judged by are read at the same moment.
func (s *Store) ResyncPage(ctx context.Context, q ResyncPageQuery) ([]ResyncCandidate, error) {
	if q.Limit < 1 {
		return nil, errors.New("resync page: a positive limit is required")
	}
	mods, err := s.resyncModules(ctx, q.Endpoint)
	if err != nil {
		return nil, err
	}
	live := q.Endpoint.liveRecordEvents()
	covered := "FALSE"
	var coveredArgs []any
	if len(live) > 0 {
		cond, args, err := s.committedAfter(q.Position)
		if err != nil {
			return nil, err
		}
		covered = "EXISTS (SELECT 1 FROM events e WHERE e.record_id = r.id AND e.type IN ? AND " + cond + ")"
		coveredArgs = append([]any{live}, args...)
	}
	var out []ResyncCandidate
	for _, m := range mods {
		if m.ID < q.After.ModuleID {
			continue
		}
		after := ""
		if m.ID == q.After.ModuleID {
			after = q.After.RecordID
		}
		var rows []struct {
			Record
			Covered bool
		}
		args := append(append([]any{}, coveredArgs...), m.ID, after, q.Limit-len(out))
		err := s.r.WithContext(ctx).Raw(`SELECT r.*, `+covered+` AS covered FROM records r
			WHERE r.module_id = ? AND r.id > ? ORDER BY r.id LIMIT ?`, args...).Scan(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("resync page: %w", err)
		}
		for _, row := range rows {
			out = append(out, ResyncCandidate{Record: row.Record, Module: m, Covered: row.Covered})
		}
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

// snapshotBody is the JSON body of a record_snapshot event: the keys of
// every record event, and the resync it belongs to.
type snapshotBody struct {
	ID         string         `json:"id"`
	Event      string         `json:"event"`
	OccurredAt string         `json:"occurred_at"`
	TenantID   string         `json:"tenant_id"`
	Module     eventModule    `json:"module"`
	Record     eventRecord    `json:"record"`
	Changes    map[string]any `json:"changes"`
	Resync     snapshotResync `json:"resync"`
}

type snapshotResync struct {
	ID         string `json:"id"`
	EndpointID string `json:"endpoint_id"`
}

// SnapshotEventID is the id of the record_snapshot event of a record's
// version in a resync: derived from the three, so that a page done again
// makes the same event, whose delivery Temporal then refuses as started.
// It has the form of every event id, timed at the resync's start.
func SnapshotEventID(rs *WebhookResync, recordID string, version int64) string {
	sum := sha256.Sum256([]byte(rs.ID + "\x00" + recordID + "\x00" + strconv.FormatInt(version, 10)))
	var id ulid.ULID
	if err := id.SetTime(ulid.Timestamp(rs.StartedAt)); err != nil {
		// Only times past the year 10889 have no ULID.
		panic(err)
	}
	if err := id.SetEntropy(sum[:10]); err != nil {
		panic(err)
	}
	return PrefixEvent + strings.ToLower(id.String())
}

// SnapshotEvent is the record_snapshot event of c in resync rs.
func SnapshotEvent(rs *WebhookResync, c *ResyncCandidate) (Event, error) {
	rec := &c.Record
	id := SnapshotEventID(rs, rec.ID, rec.Version)
	body, err := json.Marshal(snapshotBody{
		ID: id, Event: EventRecordSnapshot, OccurredAt: rs.StartedAt.UTC().Format(time.RFC3339Nano), TenantID: rs.TenantID,
		Module: eventModule{ID: c.Module.ID, Slug: c.Module.Slug},
		Record: eventRecord{
			ID: rec.ID, ModuleID: rec.ModuleID, Fields: nonNil(rec.Fields), CustomData: nonNil(rec.CustomData),
			Version: rec.Version, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt,
		},
		Changes: map[string]any{},
		Resync:  snapshotResync{ID: rs.ID, EndpointID: rs.EndpointID},
	})
	if err != nil {
		return Event{}, fmt.Errorf("encode snapshot: %w", err)
	}
	return Event{ID: id, TenantID: rs.TenantID, ModuleID: rec.ModuleID, RecordID: rec.ID, RecordVersion: rec.Version, Type: EventRecordSnapshot, Payload: string(body), OccurredAt: rs.StartedAt}, nil
}

// SaveSnapshots stores snapshot events, as dispatched: the dispatcher,
// which delivers to every subscribed endpoint, never takes them; the
// resync starts each one's delivery to its own endpoint. An event stored
// already (a page done again) is kept as it is.
func (s *Store) SaveSnapshots(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	now := s.now()
	for i := range events {
		if events[i].Type != EventRecordSnapshot {
			return fmt.Errorf("save snapshots: event %s is a %s", events[i].ID, events[i].Type)
		}
		events[i].DispatchedAt = &now
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoNothing: true}).Create(&events).Error
	})
	if err != nil {
		return fmt.Errorf("save snapshots: %w", err)
	}
	return nil
}

// liveRecordEvents are the record event types e takes that the outbox
// writes as records change: its events without record_snapshot and
// endpoint_disabled. A resync judges a record covered by these.
func (e *WebhookEndpoint) liveRecordEvents() []string {
	var live []string
	for _, t := range e.Events {
		if t != EventRecordSnapshot && t != EventEndpointDisabled {
			live = append(live, t)
		}
	}
	return live
}

// SubscribesSnapshots reports whether e takes record_snapshot events.
func (e *WebhookEndpoint) SubscribesSnapshots() bool {
	return slices.Contains(e.Events, EventRecordSnapshot)
}

// SnapshotSuperseded reports whether the record_snapshot event ev need not
// be sent to ep: an event of its record of a type ep subscribes to was
// committed after the position of ev's resync, and so carries a later
// version than the snapshot. An endpoint whose ordering is "record" gets
// the live event first when its sequencer had it before the snapshot;
// sending the snapshot after it would take the receiver back in time.
func (s *Store) SnapshotSuperseded(ctx context.Context, ev *Event, ep *WebhookEndpoint) (bool, error) {
	if ev.Type != EventRecordSnapshot || ev.RecordID == "" {
		return false, nil
	}
	var body struct {
		Resync snapshotResync `json:"resync"`
	}
	if err := json.Unmarshal([]byte(ev.Payload), &body); err != nil {
		return false, fmt.Errorf("read snapshot %s: %w", ev.ID, err)
	}
	var rs WebhookResync
	if err := s.r.WithContext(ctx).Where("tenant_id = ? AND id = ?", ev.TenantID, body.Resync.ID).Take(&rs).Error; err != nil {
		return false, notFoundOr(err, "load the snapshot's resync")
	}
	live := ep.liveRecordEvents()
	if len(live) == 0 {
		return false, nil
	}
	cond, args, err := s.committedAfter(rs.Position)
	if err != nil {
		return false, err
	}
	var n int64
	err = s.r.WithContext(ctx).Raw("SELECT COUNT(*) FROM events e WHERE e.record_id = ? AND e.tenant_id = ? AND e.type IN ? AND "+cond,
		append([]any{ev.RecordID, ev.TenantID, live}, args...)...).Scan(&n).Error
	if err != nil {
		return false, fmt.Errorf("live events after the snapshot: %w", err)
	}
	return n > 0, nil
}
