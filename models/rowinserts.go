package models

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// maxChunkRows is the most rows one multi-row insert of the store's
// writes takes. A write of n rows runs one statement a set bit of n, in
// falling sizes (64, 32, … 1): its statements have at most seven shapes a
// table, each prepared once on SQLite's writer (writerstmts.go) and cached
// by pgx on PostgreSQL's connections, where one insert of n rows would be
// a new statement for every n.
const maxChunkRows = 64

// rowInsert is a multi-row INSERT of one table's columns, written out for
// each chunk size and dialect on first use.
type rowInsert struct {
	head string
	cols int
	sql  sync.Map // chunkKey → string
}

type chunkKey struct {
	d    Dialect
	rows int
}

// query is the insert of rows rows, its placeholders the dialect's.
func (ri *rowInsert) query(d Dialect, rows int) string {
	k := chunkKey{d, rows}
	if q, ok := ri.sql.Load(k); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString(ri.head)
	n := 0
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range ri.cols {
			if c > 0 {
				b.WriteString(", ")
			}
			n++
			if d == Postgres {
				b.WriteString("$" + strconv.Itoa(n))
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	q, _ := ri.sql.LoadOrStore(k, b.String())
	return q.(string)
}

var (
	recordInsert = &rowInsert{
		head: "INSERT INTO records (id, tenant_id, module_id, fields, custom_data, version, created_at, updated_at) VALUES ",
		cols: 8,
	}
	// eventInsert is the events' insert on PostgreSQL, where seq comes
	// from its sequence; sqliteEventInsert numbers them (insertEvents).
	eventInsert = &rowInsert{
		head: `INSERT INTO events (id, tenant_id, module_id, record_id, record_version, type, payload, occurred_at,
		dispatched_at, claimed_by, claimed_until, fanout_after, trace_parent) VALUES `,
		cols: 13,
	}
	sqliteEventInsert = &rowInsert{
		head: `INSERT INTO events (id, tenant_id, module_id, record_id, record_version, type, payload, occurred_at,
		dispatched_at, claimed_by, claimed_until, fanout_after, trace_parent, seq) VALUES `,
		cols: 14,
	}
)

// insertRows inserts the rows whose values args holds, ri.cols a row, in
// tx, a chunk a statement.
func (s *Store) insertRows(tx *gormDB, ri *rowInsert, args []any) error {
	rows := len(args) / ri.cols
	for done := 0; done < rows; {
		k := chunkRows(rows - done)
		q := ri.query(s.dialect, k)
		part := args[done*ri.cols : (done+k)*ri.cols]
		var err error
		if s.dialect == Postgres {
			_, err = tx.Statement.ConnPool.ExecContext(tx.Statement.Context, q, part...)
			s.observe(q)
		} else {
			_, err = s.execWrite(tx, q, part...)
		}
		if err != nil {
			return err
		}
		done += k
	}
	return nil
}

// chunkRows is the size of the next chunk of an insert with n rows left:
// the highest power of two in n, at most maxChunkRows.
func chunkRows(n int) int {
	k := 1
	for k*2 <= n && k*2 <= maxChunkRows {
		k *= 2
	}
	return k
}

// insertRecordRows inserts records in tx.
func (s *Store) insertRecordRows(tx *gormDB, records []Record) error {
	args := make([]any, 0, recordInsert.cols*len(records))
	for i := range records {
		var err error
		if args, err = recordArgs(args, &records[i]); err != nil {
			return err
		}
	}
	if err := s.insertRows(tx, recordInsert, args); err != nil {
		return fmt.Errorf("insert records: %w", err)
	}
	return nil
}

// recordArgs appends a record's values, as recordInsert lists them, its
// JSON columns encoded.
func recordArgs(args []any, r *Record) ([]any, error) {
	if e := r.encoded; e != nil {
		return append(args, r.ID, r.TenantID, r.ModuleID, string(e.fields), string(e.customData), r.Version, r.CreatedAt, r.UpdatedAt), nil
	}
	fields, err := r.Fields.Value()
	if err != nil {
		return nil, err
	}
	custom, err := r.CustomData.Value()
	if err != nil {
		return nil, err
	}
	return append(args, r.ID, r.TenantID, r.ModuleID, fields, custom, r.Version, r.CreatedAt, r.UpdatedAt), nil
}

// eventArgs appends an event's values, as eventInsert lists them.
func eventArgs(args []any, e *Event) []any {
	return append(args, e.ID, e.TenantID, e.ModuleID, e.RecordID, e.RecordVersion, e.Type, e.Payload, e.OccurredAt,
		e.DispatchedAt, e.ClaimedBy, e.ClaimedUntil, e.FanoutAfter, e.TraceParent)
}

// queryWrite reads the one row of a statement of a write in tx, prepared
// as execWrite's.
func (s *Store) queryWrite(tx *gormDB, query string, args ...any) *sql.Row {
	sqlTx, ok := tx.Statement.ConnPool.(*sql.Tx)
	if s.dialect != SQLite || !ok {
		return s.queryRow(tx, query, args...)
	}
	st := s.writerStmts.lookup(query)
	if st == nil {
		return s.queryRow(tx, query, args...)
	}
	ctx := tx.Statement.Context
	row := sqlTx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	s.observe(query)
	return row
}
