package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/recordhub/recordhub/models"
)

// Clock is a settable clock for stores under test: expiry and rotation
// grace can then be crossed without waiting. It starts at the real time and
// moves only when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at the current time.
func NewClock() *Clock { return &Clock{now: time.Now()} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// DB is one test's database, a SQLite file or a PostgreSQL schema, on which
// several stores can be opened (replicas of the service) and which the test
// can also query directly, to see what the store really wrote.
type DB struct {
	Dialect models.Dialect
	// DSN is the SQLite file path or the PostgreSQL URL.
	DSN string
}

// NewDB returns an empty database of the given dialect for the test.
// PostgreSQL tests are skipped (or fail, when Required) if the server
// cannot be reached.
func NewDB(t testing.TB, d models.Dialect) *DB {
	t.Helper()
	if d == models.Postgres {
		return &DB{Dialect: d, DSN: PostgresURL(t)}
	}
	return &DB{Dialect: d, DSN: filepath.Join(t.TempDir(), "recordhub.db")}
}

// Open opens a migrated store on the database, closed when the test ends.
// opts.SecretBox defaults to the test box, opts.MaxOpenConns to a small
// pool: tests run in parallel against one PostgreSQL server whose
// connections are few.
func (db *DB) Open(t testing.TB, opts models.Options) *models.Store {
	t.Helper()
	ctx := context.Background()
	if opts.SecretBox == nil {
		opts.SecretBox = SecretBox(t)
	}
	if opts.MaxOpenConns == 0 {
		opts.MaxOpenConns = 4
	}
	var (
		s   *models.Store
		err error
	)
	switch db.Dialect {
	case models.Postgres:
		s, err = models.OpenPostgres(ctx, db.DSN, opts)
	default:
		s, err = models.OpenSQLite(ctx, db.DSN, opts)
	}
	if err != nil {
		t.Fatalf("open %s store: %v", db.Dialect, err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// SQL returns a plain database/sql handle on the database, closed when the
// test ends. Write placeholders as ?; Rebind adapts them to the dialect.
func (db *DB) SQL(t testing.TB) *sql.DB {
	t.Helper()
	driver, dsn := "pgx", db.DSN
	if db.Dialect != models.Postgres {
		driver, dsn = "sqlite", "file:"+db.DSN+"?_pragma=busy_timeout(10000)"
	}
	h, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", db.Dialect, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// Rebind turns the ? placeholders of query into $1, $2, … on PostgreSQL.
func (db *DB) Rebind(query string) string {
	if db.Dialect != models.Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// OpenWithClock returns a migrated, empty store of the given dialect whose
// time is now, closed when the test ends.
func OpenWithClock(t testing.TB, d models.Dialect, now func() time.Time) *models.Store {
	t.Helper()
	return NewDB(t, d).Open(t, models.Options{Now: now})
}

// NameTenant renames tenant id to name in the database, bypassing the
// store, which refuses a second tenant of a name: it makes the tenants
// that share a name that a database made before names were unique may
// hold.
func (db *DB) NameTenant(t testing.TB, id, name string) {
	t.Helper()
	res, err := db.SQL(t).Exec(db.Rebind("UPDATE tenants SET name = ? WHERE id = ?"), name, id)
	if err != nil {
		t.Fatalf("rename tenant %s: %v", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("rename tenant %s: %d rows (%v), want 1", id, n, err)
	}
}

// TenantAIKey returns the AI provider key stored for tenant id, "" when
// none is, opened with box as the store seals it. The test fails when the
// tenant is missing or the stored value does not open: a key stored in
// clear, or sealed for another tenant.
func (db *DB) TenantAIKey(t testing.TB, box *models.SecretBox, id string) string {
	t.Helper()
	var sealed sql.NullString
	if err := db.SQL(t).QueryRow(db.Rebind("SELECT ai_key FROM tenants WHERE id = ?"), id).Scan(&sealed); err != nil {
		t.Fatalf("read the AI key of tenant %s: %v", id, err)
	}
	if !sealed.Valid {
		return ""
	}
	key, err := box.Open(sealed.String, "tenant-ai-key:"+id)
	if err != nil {
		t.Fatalf("open the AI key of tenant %s: %v", id, err)
	}
	return key
}

// EventsCommittedAfter returns the ids of the events committed after the
// outbox position pos (a resync's): on PostgreSQL those whose transaction
// pos's snapshot does not see, on SQLite those written after its row id.
func (db *DB) EventsCommittedAfter(t testing.TB, pos string) map[string]bool {
	t.Helper()
	query, arg := "SELECT id FROM events WHERE txid IS NOT NULL AND NOT pg_visible_in_snapshot(txid::text::xid8, CAST(? AS pg_snapshot))", any(pos)
	if db.Dialect != models.Postgres {
		n, err := strconv.ParseInt(pos, 10, 64)
		if err != nil {
			t.Fatalf("outbox position %q is not one of SQLite's: %v", pos, err)
		}
		query, arg = "SELECT id FROM events WHERE rowid > ?", n
	}
	rows, err := db.SQL(t).Query(db.Rebind(query), arg)
	if err != nil {
		t.Fatalf("events committed after %s: %v", pos, err)
	}
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatalf("events committed after %s: %v", pos, err)
		}
		ids[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("events committed after %s: %v", pos, err)
	}
	return ids
}

// Rows runs query (with ? placeholders) on the database directly and
// returns its rows with every column as text, NULL as "NULL": what a test
// reads to see what is stored, past the store.
func (db *DB) Rows(t testing.TB, query string, args ...any) []map[string]string {
	t.Helper()
	rows, err := db.SQL(t).Query(db.Rebind(query), args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			switch v := vals[i].(type) {
			case nil:
				row[c] = "NULL"
			case []byte:
				row[c] = string(v)
			default:
				row[c] = fmt.Sprint(v)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
