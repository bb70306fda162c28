package models

import (
	"context"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"gorm.io/gorm"
)

// Heavy reads are the admin reads whose cost grows with a tenant's history
// (delivery attempts, access logs, inbound calls, usage): a burst of them
// from one tenant's console or script must not take the connections that
// every other tenant's key lookups and record reads need. They run on a
// small pool of their own, so that such a burst queues behind itself; the
// API bounds each of them with a deadline, so that one that waits or runs
// too long is refused instead of holding a connection.

// DefaultHeavyReadConns is the size of the heavy-read pool: enough for a
// console's page and a script at once, few enough that a burst leaves the
// database to everyone else.
const DefaultHeavyReadConns = 2

// DefaultHeavyReadTimeout is how long the API lets a request of heavy reads
// wait for a connection and run before it answers 503 unavailable.
const DefaultHeavyReadTimeout = 5 * time.Second

// DefaultHeavyStatementTimeout is PostgreSQL's statement_timeout on the
// heavy pool's connections: a second line behind the request's deadline,
// for a cancel request that never reached the server.
const DefaultHeavyStatementTimeout = 2 * DefaultHeavyReadTimeout

// DefaultSQLiteReaders sizes SQLite's read pool for the machine: two
// connections per CPU the process may use (a read is CPU work in the same
// process; the second hides the time one spends copying rows out), and
// never fewer than 4.
func DefaultSQLiteReaders() int {
	return max(4, 2*runtime.GOMAXPROCS(0))
}

// heavyReadKey marks a context whose reads run on the heavy pool.
type heavyReadKey struct{}

// HeavyRead returns ctx marked so that the store's reads under it run on
// the heavy-read pool. Writes, and reads inside a transaction, are not
// moved.
func HeavyRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, heavyReadKey{}, true)
}

// IsHeavyRead reports whether ctx was marked with HeavyRead.
func IsHeavyRead(ctx context.Context) bool {
	heavy, _ := ctx.Value(heavyReadKey{}).(bool)
	return heavy
}

// routeHeavyReads sizes the heavy pool and moves the reads of a marked
// context to it: a GORM callback swaps the statement's connection pool
// before the query runs, as GORM's read/write resolver does, so that every
// read method honours the mark without choosing a pool itself.
func (s *Store) routeHeavyReads(opts Options) {
	n := opts.HeavyReadConns
	if n <= 0 {
		n = DefaultHeavyReadConns
	}
	s.heavy.SetMaxOpenConns(n)
	s.heavy.SetMaxIdleConns(n)
	readPool := s.r.ConnPool
	route := func(db *gorm.DB) {
		// Only the read pool's own statements move: a transaction's stay on
		// its connection.
		if db.Statement.ConnPool == readPool && IsHeavyRead(db.Statement.Context) {
			db.Statement.ConnPool = s.heavy
		}
	}
	cb := s.r.Callback()
	// Registration fails only on a duplicate name, which these are not.
	_ = cb.Query().Before("gorm:query").Register("recordhub:heavy_reads", route)
	_ = cb.Row().Before("gorm:row").Register("recordhub:heavy_reads", route)
}

// heavyConnConfig returns the configuration of the PostgreSQL heavy pool's
// connections: read-only, with a statement_timeout of their own, and, when
// a call's context ends, a cancel request to the server that keeps the
// connection (pgx's default closes it first, so every read stopped at its
// deadline would cost a new connection).
func (s *Store) heavyConnConfig(opts Options) *pgx.ConnConfig {
	timeout := opts.HeavyStatementTimeout
	if timeout <= 0 {
		timeout = DefaultHeavyStatementTimeout
	}
	c := s.pgConfig.Copy()
	if c.RuntimeParams == nil {
		c.RuntimeParams = map[string]string{}
	}
	c.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	c.RuntimeParams["default_transaction_read_only"] = "on"
	c.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		// The connection is closed only if the server has not answered the
		// cancel within a second.
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: time.Second}
	}
	return c
}
