package models

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
)

// Record is one entry of a module: typed fields, free-form custom data and a
// version that grows by one with every change.
type Record struct {
	ID         string `gorm:"primaryKey"`
	TenantID   string
	ModuleID   string
	Fields     JSONObject `gorm:"type:text"`
	CustomData JSONObject `gorm:"type:text"`
	Version    int64
	CreatedAt  time.Time `gorm:"autoCreateTime:false"`
	UpdatedAt  time.Time `gorm:"autoUpdateTime:false"`
	// encoded holds Fields and CustomData as JSON for a record this
	// process made (newRecord), so that its row, its events and its
	// answer encode them once; nil otherwise.
	encoded *encodedRecord
}

type encodedRecord struct {
	fields, customData json.RawMessage
}

// FieldsJSON is the record's fields as JSON when they were encoded as it
// was made, else nil: its creator's answer shows them without encoding
// them again.
func (r *Record) FieldsJSON() json.RawMessage {
	if r.encoded == nil {
		return nil
	}
	return r.encoded.fields
}

// CustomDataJSON is FieldsJSON for the custom data.
func (r *Record) CustomDataJSON() json.RawMessage {
	if r.encoded == nil {
		return nil
	}
	return r.encoded.customData
}

// Sort orders of record lists.
var recordSorts = map[string]string{
	"created_at":  "created_at ASC, id ASC",
	"-created_at": "created_at DESC, id DESC",
	"updated_at":  "updated_at ASC, id ASC",
	"-updated_at": "updated_at DESC, id DESC",
}

// DefaultRecordSort lists the newest records first.
const DefaultRecordSort = "-created_at"

// ValidRecordSort reports whether sort names a record order.
func ValidRecordSort(sort string) bool {
	_, ok := recordSorts[sort]
	return ok
}

// RecordQuery selects a page of a module's records.
type RecordQuery struct {
	Page Page
	// Sort is one of created_at, -created_at, updated_at, -updated_at.
	Sort string
	// Filters maps a field name to the value it must equal (see
	// Field.FilterValue), or to a map of operator → value (see
	// FilterCond); every condition must hold.
	Filters map[string]any
	// Times are conditions on created_at and updated_at; every one must
	// hold.
	Times []TimeCond
}

// CreateRecord validates and inserts a record. With a context that
// carries a KeyedCreate, outside a transaction of Atomically's, it stores
// the create's answer under that idempotency key in its own statements
// (idempotent_create.go).
func (s *Store) CreateRecord(ctx context.Context, m *Module, fields, customData map[string]any) (*Record, error) {
	r, events, err := s.newRecord(m, fields, customData)
	if err != nil {
		return nil, err
	}
	if k := takeKeyedCreate(ctx); k != nil {
		err = s.createKeyed(ctx, k, r, events)
	} else {
		err = s.insertRecord(ctx, r, events)
	}
	if err != nil {
		return nil, err
	}
	s.eventsWritten()
	return r, nil
}

// newRecord validates a new record's values and returns it with its events.
func (s *Store) newRecord(m *Module, fields, customData map[string]any) (*Record, []Event, error) {
	if fields == nil {
		fields = map[string]any{}
	}
	if customData == nil {
		customData = map[string]any{}
	}
	errs := append(m.ValidateRecordFields(fields, nil), unstorableErrors("custom_data", customData)...)
	if len(errs) == 0 {
		errs = append(oversized("fields", fields), oversized("custom_data", customData)...)
	}
	if len(errs) > 0 {
		return nil, nil, ValidationError(errs)
	}
	now := s.now()
	r := &Record{
		ID: NewID(PrefixRecord), TenantID: m.TenantID, ModuleID: m.ID,
		Fields: fields, CustomData: customData, Version: 1, CreatedAt: now, UpdatedAt: now,
	}
	var err error
	r.encoded = &encodedRecord{}
	if r.encoded.fields, err = marshalObject(fields); err != nil {
		return nil, nil, fmt.Errorf("encode fields: %w", err)
	}
	if r.encoded.customData, err = marshalObject(customData); err != nil {
		return nil, nil, fmt.Errorf("encode custom data: %w", err)
	}
	events, err := recordEvents(m, nil, r, now)
	if err != nil {
		return nil, nil, err
	}
	return r, events, nil
}

// insertRecord inserts a record, counts it and writes its events,
// atomically. On PostgreSQL it is one statement, one round trip (in ctx's
// transaction when it is in one); SQLite runs
// in process, so a transaction of several statements costs little there.
func (s *Store) insertRecord(ctx context.Context, r *Record, events []Event) error {
	stampTrace(ctx, events)
	if s.dialect == Postgres {
		return s.insertRecordsPostgres(s.writer(ctx), []Record{*r}, events)
	}
	return s.write(ctx, func(tx *gorm.DB) error { return s.insertRecordTx(tx, r, events) })
}

// insertRecordsPostgres inserts records of one module, counts them and
// writes their events in one statement on db.
func (s *Store) insertRecordsPostgres(db *gormDB, records []Record, events []Event) error {
	args := make([]any, 0, recordInsert.cols*len(records)+eventInsert.cols*len(events)+1)
	for i := range records {
		var err error
		if args, err = recordArgs(args, &records[i]); err != nil {
			return err
		}
	}
	for i := range events {
		args = eventArgs(args, &events[i])
	}
	args = append(args, s.shard())
	q := recordsStatement(len(records), len(events))
	_, err := db.Statement.ConnPool.ExecContext(db.Statement.Context, q, args...)
	s.observe(q)
	if err != nil {
		return fmt.Errorf("insert record: %w", err)
	}
	return nil
}

// recordsStatements are insertRecordsPostgres's statements by their
// numbers of records and events.
var recordsStatements sync.Map

// recordsStatement is insertRecordsPostgres's statement for n records and
// e events.
func recordsStatement(n, e int) string {
	k := [2]int{n, e}
	if q, ok := recordsStatements.Load(k); ok {
		return q.(string)
	}
	records := recordInsert.query(Postgres, n)
	events := eventInsert.query(Postgres, e)
	// The events' placeholders follow the records'.
	events = renumber(events, n*recordInsert.cols)
	q := "WITH r AS (" + records + " RETURNING module_id), e AS (" + events + `)
		INSERT INTO module_record_counts (module_id, shard, count) SELECT module_id, $` + strconv.Itoa(n*recordInsert.cols+e*eventInsert.cols+1) + `, count(*) FROM r GROUP BY module_id
		ON CONFLICT (module_id, shard) DO UPDATE SET count = module_record_counts.count + excluded.count`
	q2, _ := recordsStatements.LoadOrStore(k, q)
	return q2.(string)
}

// renumber adds by to every $n placeholder of a PostgreSQL statement.
func renumber(q string, by int) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] != '$' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		n, _ := strconv.Atoi(q[i+1 : j])
		b.WriteString("$" + strconv.Itoa(n+by))
		i = j - 1
	}
	return b.String()
}

// insertRecordTx inserts a record, counts it and writes its events in tx.
func (s *Store) insertRecordTx(tx *gorm.DB, r *Record, events []Event) error {
	if err := s.insertRecordRows(tx, []Record{*r}); err != nil {
		return err
	}
	if err := s.insertEvents(tx, events); err != nil {
		return err
	}
	return s.addToCount(tx, r.ModuleID, 1)
}

func (s *Store) addToCount(tx *gorm.DB, moduleID string, n int) error {
	err := tx.Exec(`INSERT INTO module_record_counts (module_id, shard, count) VALUES (?, ?, ?)
		ON CONFLICT (module_id, shard) DO UPDATE SET count = module_record_counts.count + excluded.count`,
		moduleID, s.shard(), n).Error
	if err != nil {
		return fmt.Errorf("count record: %w", err)
	}
	return nil
}

// RecordView is a record as read for display: its JSON columns are passed
// on as stored, never decoded and encoded again.
type RecordView struct {
	ID         string
	ModuleID   string
	Fields     json.RawMessage
	CustomData json.RawMessage
	Version    int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

const recordViewColumns = "id, module_id, fields, custom_data, version, created_at, updated_at"

func scanRecordView(sc interface{ Scan(...any) error }, v *RecordView) error {
	return sc.Scan(&v.ID, &v.ModuleID, (*[]byte)(&v.Fields), (*[]byte)(&v.CustomData), &v.Version, &v.CreatedAt, &v.UpdatedAt)
}

// GetRecord returns a record of one of the tenant's modules.
func (s *Store) GetRecord(ctx context.Context, tenantID, moduleID, id string) (*RecordView, error) {
	stmt, err := s.prepared(ctx, "SELECT "+recordViewColumns+" FROM records WHERE id = ? AND module_id = ? AND tenant_id = ?")
	if err != nil {
		return nil, err
	}
	var v RecordView
	if err := scanRecordView(stmt.QueryRowContext(ctx, id, moduleID, tenantID), &v); err != nil {
		return nil, notFoundOr(err, "load record")
	}
	return &v, nil
}

// ListRecords returns a page of a module's records and the number of
// records that match the filters, in one query when the page is not empty.
// Unfiltered totals come from the module's counters; filtered ones are
// counted.
func (s *Store) ListRecords(ctx context.Context, m *Module, q RecordQuery) ([]RecordView, int64, error) {
	order, ok := recordSorts[q.Sort]
	if !ok {
		order = recordSorts[DefaultRecordSort]
	}
	where := "module_id = ? AND tenant_id = ?"
	args := []any{m.ID, m.TenantID}
	for _, name := range slices.Sorted(maps.Keys(q.Filters)) {
		for _, c := range filterConds(q.Filters[name]) {
			cond, cargs, err := s.condOn("fields", name, c)
			if err != nil {
				return nil, 0, err
			}
			where += " AND " + cond
			args = append(args, cargs...)
		}
	}
	for _, c := range q.Times {
		cond, cargs, err := timeCond(c)
		if err != nil {
			return nil, 0, err
		}
		where += " AND " + cond
		args = append(args, cargs...)
	}
	filtered := len(q.Filters) > 0 || len(q.Times) > 0
	const counted = "SELECT COALESCE(SUM(count), 0) FROM module_record_counts WHERE module_id = ?"
	totalExpr, totalArgs := "("+counted+")", []any{m.ID}
	if filtered {
		totalExpr, totalArgs = "COUNT(*) OVER ()", nil
	}
	query := "SELECT " + recordViewColumns + ", " + totalExpr + " FROM records WHERE " + where +
		" ORDER BY " + order + " LIMIT ? OFFSET ?"
	qargs := append(append(totalArgs, args...), q.Page.Limit, q.Page.Offset())
	rows, err := s.query(ctx, query, !filtered, qargs...)
	if err != nil {
		return nil, 0, fmt.Errorf("list records: %w", err)
	}
	defer rows.Close()
	var total int64
	records := make([]RecordView, 0, q.Page.Limit)
	for rows.Next() {
		var v RecordView
		err := rows.Scan(&v.ID, &v.ModuleID, (*[]byte)(&v.Fields), (*[]byte)(&v.CustomData), &v.Version, &v.CreatedAt, &v.UpdatedAt, &total)
		if err != nil {
			return nil, 0, fmt.Errorf("scan record: %w", err)
		}
		records = append(records, v)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list records: %w", err)
	}
	if len(records) > 0 || q.Page.Offset() == 0 {
		// An empty first page is its own answer: nothing matched. A
		// second statement could count a record committed in between,
		// and answer a total of 1 beside no data.
		return records, total, nil
	}
	// An empty page past the end carries no total.
	countQuery, countArgs := counted, []any{m.ID}
	if filtered {
		countQuery, countArgs = "SELECT COUNT(*) FROM records WHERE "+where, args
	}
	crow, err := s.query(ctx, countQuery, !filtered, countArgs...)
	if err != nil {
		return nil, 0, fmt.Errorf("count records: %w", err)
	}
	defer crow.Close()
	if crow.Next() {
		if err := crow.Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count records: %w", err)
		}
	}
	return records, total, crow.Err()
}

// query runs a read, through a cached prepared statement when the query
// text is one of a few fixed ones (prepare), else directly.
func (s *Store) query(ctx context.Context, query string, prepare bool, args ...any) (*sql.Rows, error) {
	if prepare {
		stmt, err := s.prepared(ctx, query)
		if err != nil {
			return nil, err
		}
		return stmt.QueryContext(ctx, args...)
	}
	db, err := s.r.DB()
	if err != nil {
		return nil, fmt.Errorf("pool: %w", err)
	}
	return db.QueryContext(ctx, s.bind(query), args...)
}

// filterOn returns the condition that key name of the JSON column equals v
// (a string, bool or json.Number), and its arguments. column is a constant
// of the caller's, never input.
func (s *Store) filterOn(column, name string, v any) (string, []any, error) {
	if n, ok := v.(json.Number); ok {
		return s.numberFilterOn(column, name, n)
	}
	if s.dialect == Postgres {
		b, err := json.Marshal(v)
		if err != nil {
			return "", nil, fmt.Errorf("encode filter: %w", err)
		}
		return column + " -> ? = CAST(? AS jsonb)", []any{name, string(b)}, nil
	}
	column = readableJSON(column)
	path := `$."` + name + `"`
	if b, ok := v.(bool); ok {
		// SQLite reads JSON true and false as 1 and 0; the type tells them
		// from numbers.
		i, typ := 0, "false"
		if b {
			i, typ = 1, "true"
		}
		return "json_extract(" + column + ", ?) = ? AND json_type(" + column + ", ?) = ?", []any{path, i, path, typ}, nil
	}
	return "json_extract(" + column + ", ?) = ? AND json_type(" + column + ", ?) = 'text'", []any{path, v, path}, nil
}

// readableJSON is SQLite's expression of a JSON column that is NULL where
// SQLite's JSON functions cannot read the column, so that such a row
// matches no condition on it: json_extract and json_type stop at 1,000
// levels of nesting with an error that would fail the whole statement,
// and releases that did not bound nesting may have stored deeper values.
// Such a row is still listed unfiltered, read, patched once its value is
// fixed, and deleted; only a condition on it cannot be decided, and no
// match is the answer that fails no one else's request. Rewriting the rows
// instead would change data that their owners sent. CASE, unlike AND,
// guarantees json_valid runs first.
func readableJSON(column string) string {
	return "(CASE WHEN json_valid(" + column + ") THEN " + column + " END)"
}

// numberFilterOn is filterOn for a number. The number is bound as an int64
// when it is an integer within range, else as a float64, and never as text
// for the database to parse: PostgreSQL's parser takes neither NaN nor
// what strconv takes beyond JSON (+1, 05, .5, 0x10, 1_000). A value that
// is no finite float64 matches nothing any record holds and is refused.
func (s *Store) numberFilterOn(column, name string, n json.Number) (string, []any, error) {
	arg, err := numberArg(name, n)
	if err != nil {
		return "", nil, err
	}
	if s.dialect == Postgres {
		// jsonb compares numbers by value: 2 equals 2.0.
		return column + " -> ? = to_jsonb(CAST(? AS " + pgNumberType(arg) + "))", []any{name, arg}, nil
	}
	column = readableJSON(column)
	path := `$."` + name + `"`
	// The type check keeps 1 and 0 from matching JSON true and false.
	return "json_extract(" + column + ", ?) = ? AND json_type(" + column + ", ?) IN ('integer', 'real')", []any{path, arg, path}, nil
}

// numberArg is the argument a number condition binds: an int64 when n is
// an integer within range, else a float64.
func numberArg(name string, n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	} else if f, err := strconv.ParseFloat(string(n), 64); err == nil && numberInRange(n) && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f, nil
	}
	return nil, Errorf(KindInvalid, "the value compared with %s must be a finite number", name)
}

// pgNumberType is the PostgreSQL type numberArg's argument is cast to.
func pgNumberType(arg any) string {
	if _, ok := arg.(float64); ok {
		return "double precision"
	}
	return "bigint"
}

// RecordPatch is an RFC 7396 merge patch of a record's fields and custom
// data; a nil member is left alone.
type RecordPatch struct {
	Fields     map[string]any
	CustomData map[string]any
}

// errVersionRace makes UpdateRecord read the record again after a
// concurrent writer won.
var errVersionRace = errors.New("record changed concurrently")

// UpdateRecord applies a merge patch to a record. With ifMatch set, the
// record must be at that version. A patch that changes nothing leaves the
// version alone; changed reports whether anything changed.
func (s *Store) UpdateRecord(ctx context.Context, m *Module, id string, patch RecordPatch, ifMatch *int64) (r *Record, changed bool, err error) {
	for range 10 {
		r, changed, err = s.updateRecordOnce(ctx, m, id, patch, ifMatch)
		if !errors.Is(err, errVersionRace) {
			return r, changed, err
		}
		if ifMatch != nil {
			return nil, false, Errorf(KindPrecondition, "the record is no longer at version %d", *ifMatch)
		}
	}
	return nil, false, Errorf(KindConflict, "the record is being changed by others; try again")
}

func (s *Store) updateRecordOnce(ctx context.Context, m *Module, id string, patch RecordPatch, ifMatch *int64) (*Record, bool, error) {
	var (
		out     Record
		changed bool
	)
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := s.lockForChange(tx, id); err != nil {
			return err
		}
		if err := tx.Where("id = ? AND module_id = ? AND tenant_id = ?", id, m.ID, m.TenantID).Take(&out).Error; err != nil {
			return notFoundOr(err, "load record")
		}
		if ifMatch != nil && *ifMatch != out.Version {
			return Errorf(KindPrecondition, "the record is at version %d, not %d", out.Version, *ifMatch)
		}
		var err error
		changed, err = s.patchRecordTx(tx, m, &out, patch)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if changed {
		s.eventsWritten()
	}
	return &out, changed, nil
}

// patchRecordTx applies a merge patch to r, a record just read in tx, and
// writes the change and its events in tx; r becomes the record as changed.
// It returns errVersionRace when another writer changed the record first.
func (s *Store) patchRecordTx(tx *gorm.DB, m *Module, r *Record, patch RecordPatch) (bool, error) {
	fields, custom := map[string]any(r.Fields), map[string]any(r.CustomData)
	newFields, newCustom := fields, custom
	if patch.Fields != nil {
		newFields = MergePatch(fields, patch.Fields).(map[string]any)
	}
	if patch.CustomData != nil {
		newCustom = MergePatch(custom, patch.CustomData).(map[string]any)
	}
	errs := m.ValidateRecordFields(newFields, fields)
	if patch.CustomData != nil {
		errs = append(errs, unstorableErrors("custom_data", newCustom)...)
	}
	// The merged record is bounded, not only the patch: PATCHes within the
	// body limit would otherwise grow it without end. Only what the patch
	// changes is measured, so that a record stored beyond the bound by an
	// earlier release can still have its other half changed.
	if len(errs) == 0 && patch.Fields != nil {
		errs = oversized("fields", newFields)
	}
	if len(errs) == 0 && patch.CustomData != nil {
		errs = oversized("custom_data", newCustom)
	}
	if len(errs) > 0 {
		return false, ValidationError(errs)
	}
	if reflect.DeepEqual(fields, newFields) && reflect.DeepEqual(custom, newCustom) {
		return false, nil
	}
	now := changeTime(s.now(), r)
	res := tx.Model(&Record{}).Where("id = ? AND version = ?", r.ID, r.Version).Updates(map[string]any{
		"fields": JSONObject(newFields), "custom_data": JSONObject(newCustom),
		"version": r.Version + 1, "updated_at": now,
	})
	if res.Error != nil {
		return false, fmt.Errorf("update record: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return false, errVersionRace
	}
	before := *r
	r.Fields, r.CustomData, r.Version, r.UpdatedAt = newFields, newCustom, r.Version+1, now
	events, err := recordEvents(m, &before, r, now)
	if err != nil {
		return false, err
	}
	return true, s.insertEvents(tx, events)
}

// changeTime is the time of a change to r: now, or just after r's last
// change when now is not later (the writers' clocks disagree: API replicas
// on several hosts). So a record's changes, and their events, are timed in
// version order, which the outbox relies on: it hands a tenant's events out
// oldest first, and a record's event only after its earlier ones
// (ClaimEvents), so an event timed before an earlier version's could hold
// up its tenant's claims.
func changeTime(now time.Time, r *Record) time.Time {
	if !now.After(r.UpdatedAt) {
		return r.UpdatedAt.Add(time.Microsecond)
	}
	return now
}

// DeleteRecord deletes a record and returns it as it was.
func (s *Store) DeleteRecord(ctx context.Context, m *Module, id string) (*Record, error) {
	var r Record
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := s.lockForChange(tx, id); err != nil {
			return err
		}
		if err := tx.Where("id = ? AND module_id = ? AND tenant_id = ?", id, m.ID, m.TenantID).Take(&r).Error; err != nil {
			return notFoundOr(err, "load record")
		}
		if err := tx.Where("id = ?", id).Delete(&Record{}).Error; err != nil {
			return fmt.Errorf("delete record: %w", err)
		}
		events, err := recordEvents(m, &r, nil, changeTime(s.now(), &r))
		if err != nil {
			return err
		}
		if err := s.insertEvents(tx, events); err != nil {
			return err
		}
		return s.addToCount(tx, m.ID, -1)
	})
	if err != nil {
		return nil, err
	}
	s.eventsWritten()
	return &r, nil
}
