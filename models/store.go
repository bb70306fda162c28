package models

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver

	"github.com/recordhub/recordhub/migrations"
)

// Dialect names the database behind a Store.
type Dialect string

// The supported databases.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Store runs every query of recordhub. It is safe for concurrent use.
type Store struct {
	// w takes writes; r takes reads. On PostgreSQL they are one pool. On
	// SQLite w holds a single connection, so writers queue in Go rather than
	// spinning on SQLITE_BUSY, while readers use WAL snapshots in parallel.
	w, r *gorm.DB
	// heavy is a small read-only pool of its own for the reads a context
	// marks with HeavyRead (see heavy.go), on both databases.
	heavy   *sql.DB
	dialect Dialect
	box     *SecretBox
	now     func() time.Time
	caches  caches
	// countShards spreads per-module record counters over rows so that
	// concurrent writers on PostgreSQL do not queue on one row lock.
	countShards int
	// maxEndpoints bounds a tenant's webhook endpoints.
	maxEndpoints int
	// pgConfig is how the key-change listener connects (PostgreSQL only).
	pgConfig *pgx.ConnConfig
	// stmts holds prepared statements of the hot read paths, by query.
	stmts sync.Map
	// eventWake wakes this process's outbox dispatcher.
	eventWake chan struct{}
	// changesWake is closed, and replaced, when events were committed or
	// announced: every change feed reader of the process waits on it
	// (ChangesWake), where eventWake has one consumer.
	changesWake changesWake
	// announce asks the announcer to NOTIFY other processes' dispatchers
	// (nil unless Options.AnnounceEvents on PostgreSQL); announcer is its
	// connection. See outbox_notify.go.
	announce  chan struct{}
	announcer *sql.DB
	// listenOnce starts the outbox listener once (ListenEvents).
	listenOnce sync.Once
	// outboxChannel is outboxChannel but in tests, which use their own
	// (NOTIFY channels are shared by every schema of a database).
	outboxChannel string
	// listenerPID is the server process of the listener's connection
	// once it listens, 0 before: tests end it to see it come back.
	listenerPID atomic.Uint32
	// life ends at Close, stopping the goroutines in background.
	life       context.Context
	endLife    context.CancelFunc
	background sync.WaitGroup
	// writes feeds the SQLite group committer (nil on PostgreSQL).
	writes     chan writeJob
	writesDone chan struct{}
	closeOnce  sync.Once
	// onStatement: see Options.OnStatement.
	onStatement func(query string)
	// bulkRunning and bulkEvery bound each tenant's resyncs and
	// recoveries: see Options.BulkRunning and Options.BulkRate.
	bulkRunning int
	bulkEvery   time.Duration
	// keyedCreateSQL holds, on PostgreSQL, the statements of keyed record
	// creates by their number of events (idempotent_create.go).
	keyedCreateSQL []string
	// writerStmts are the hot writes' statements prepared on SQLite's
	// writer (writerstmts.go).
	writerStmts writerStmts
	// idemHeld is SQLite's lock on idempotency keys (idempotency.go).
	idemHeld heldKeys
	// heldConns bounds the PostgreSQL connections held across other
	// statements (takeHeldConn); nil on SQLite.
	heldConns chan struct{}
}

// Options configure a Store.
type Options struct {
	// SecretBox encrypts stored secrets; required.
	SecretBox *SecretBox
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
	// MaxOpenConns bounds the PostgreSQL pool, or the SQLite read pool
	// (DefaultSQLiteReaders when zero).
	MaxOpenConns int
	// HeavyReadConns bounds the pool of reads marked with HeavyRead;
	// DefaultHeavyReadConns when zero.
	HeavyReadConns int
	// HeavyStatementTimeout is PostgreSQL's statement_timeout on the heavy
	// pool's connections; DefaultHeavyStatementTimeout when zero.
	HeavyStatementTimeout time.Duration
	// BusyTimeout is how long a SQLite statement waits for a lock another
	// process holds before it fails, and the call is answered unavailable;
	// DefaultBusyTimeout when zero.
	BusyTimeout time.Duration
	// OnStatement, when set, is called with the text of every statement
	// the store runs, once it has run, BEGIN, COMMIT and ROLLBACK included:
	// tests count with it what a path costs the database. It is called
	// from the goroutine that ran the statement; nil costs nothing.
	OnStatement func(query string)
	// AnnounceEvents, on PostgreSQL, has every commit that wrote outbox
	// events followed by a NOTIFY that wakes the dispatchers of other
	// processes (their stores' ListenEvents). Its statements, sent on a
	// connection of their own and after the commit, are not reported to
	// OnStatement.
	AnnounceEvents bool
	// MaxEndpointsPerTenant bounds a tenant's webhook endpoints (each
	// event's deliveries are one per endpoint that wants it);
	// DefaultMaxEndpointsPerTenant when zero.
	MaxEndpointsPerTenant int
	// BulkRunning is how many resyncs and recoveries of one tenant run at
	// once, together (DefaultBulkRunning when zero, no bound when
	// negative).
	BulkRunning int
	// BulkRate is how many deliveries a second a tenant's resyncs and
	// recoveries start, together, over every process sharing the database
	// (DefaultBulkRate when zero, no pace when negative).
	BulkRate int
}

// DefaultBusyTimeout lets another process (a CLI command, a backup) hold
// the SQLite database's lock for a while without failing the service's
// calls.
const DefaultBusyTimeout = 10 * time.Second

// DefaultConnectTimeout bounds each attempt to connect to PostgreSQL when
// DATABASE_URL (or PGCONNECT_TIMEOUT) sets no connect_timeout. Without a
// bound, a server that accepts connections and never answers (a host
// that is restarting, a half-open network path) holds every call that
// needs a new connection for as long as its client waits; with it, the
// call is answered unavailable within seconds. A refused connection fails
// at once whatever the bound.
const DefaultConnectTimeout = 3 * time.Second

// gormConfig configures GORM. Prepared statements are kept only where no
// transaction runs: GORM re-prepares and closes a transaction's statements
// on every transaction, which costs more than it saves. pgx caches
// statements per connection by itself.
func gormConfig(now func() time.Time, prepare bool) *gorm.Config {
	return &gorm.Config{
		SkipDefaultTransaction: true,
		PrepareStmt:            prepare,
		Logger:                 logger.Discard,
		NowFunc:                now,
	}
}

// OpenSQLite opens (creating it when missing) the SQLite database at path.
func OpenSQLite(ctx context.Context, path string, opts Options) (*Store, error) {
	// synchronous=NORMAL in WAL mode survives a process crash; an OS crash
	// or power loss can lose the last commits. Production runs PostgreSQL.
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	busyPragma := "_pragma=busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")"
	dsn := "file:" + path + "?" + busyPragma + "&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	s, err := newStore(opts, SQLite, 1)
	if err != nil {
		return nil, err
	}
	// The writer keeps its sub-journals in memory: every write of the
	// group commit runs in a savepoint (groupcommit.go), whose journal
	// holds the first image of each page the write changes, and in a temp
	// file each such page costs a system call. What it holds is bounded by
	// the pages one group changes; the readers, whose temp files are
	// sorts, keep the default.
	writeDSN := dsn + "&_pragma=temp_store(MEMORY)"
	if s.w, err = gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: writeDSN}), gormConfig(s.now, false)); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if s.r, err = gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: dsn}), gormConfig(s.now, true)); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	wdb, err := s.w.DB()
	if err != nil {
		return nil, fmt.Errorf("sqlite pool: %w", err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetConnMaxIdleTime(0)
	rdb, err := s.r.DB()
	if err != nil {
		return nil, fmt.Errorf("sqlite pool: %w", err)
	}
	readers := opts.MaxOpenConns
	if readers <= 0 {
		readers = DefaultSQLiteReaders()
	}
	rdb.SetMaxOpenConns(readers)
	rdb.SetMaxIdleConns(readers)
	if err := wdb.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	// The heavy pool only reads: query_only refuses a write that a bug
	// might send there, which would otherwise race the single writer.
	if s.heavy, err = sql.Open("sqlite", "file:"+path+"?"+busyPragma+"&_pragma=foreign_keys(1)&_pragma=query_only(1)"); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s.routeHeavyReads(opts)
	s.observeStatements(opts.OnStatement)
	s.writes, s.writesDone = make(chan writeJob), make(chan struct{})
	go s.runWrites()
	return s, nil
}

// OpenPostgres connects to the PostgreSQL database at url.
func OpenPostgres(ctx context.Context, url string, opts Options) (*Store, error) {
	s, err := newStore(opts, Postgres, 32)
	if err != nil {
		return nil, err
	}
	if s.pgConfig, err = pgx.ParseConfig(url); err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	var connOpts []stdlib.OptionOpenDB
	if !setsConnectTimeout(url) {
		s.pgConfig.ConnectTimeout = DefaultConnectTimeout
		connOpts = append(connOpts, stdlib.OptionBeforeConnect(func(_ context.Context, c *pgx.ConnConfig) error {
			c.ConnectTimeout = DefaultConnectTimeout
			return nil
		}))
	}
	dialector := postgres.New(postgres.Config{DSN: url, OptionOpenDB: connOpts})
	if s.w, err = gorm.Open(dialector, gormConfig(s.now, false)); err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	s.r = s.w
	db, err := s.w.DB()
	if err != nil {
		return nil, fmt.Errorf("postgres pool: %w", err)
	}
	n := opts.MaxOpenConns
	if n <= 0 {
		n = 20
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(30 * time.Minute)
	s.heldConns = make(chan struct{}, max(1, n/2))
	for n := range 4 {
		s.keyedCreateSQL = append(s.keyedCreateSQL, keyedCreateSQL(n))
	}
	if err := db.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	s.heavy = stdlib.OpenDB(*s.heavyConnConfig(opts))
	s.heavy.SetConnMaxLifetime(30 * time.Minute)
	s.routeHeavyReads(opts)
	s.observeStatements(opts.OnStatement)
	s.startAnnouncer(opts)
	return s, nil
}

// setsConnectTimeout reports whether the connection string or the
// environment chooses a connect timeout (0 included: wait for ever), which
// is then kept as chosen.
func setsConnectTimeout(url string) bool {
	return strings.Contains(url, "connect_timeout") || os.Getenv("PGCONNECT_TIMEOUT") != ""
}

func newStore(opts Options, d Dialect, shards int) (*Store, error) {
	if opts.SecretBox == nil {
		return nil, errors.New("store: a secret box is required")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &Store{
		dialect:      d,
		box:          opts.SecretBox,
		now:          func() time.Time { return now().UTC().Truncate(time.Microsecond) },
		countShards:  shards,
		maxEndpoints: cmp.Or(opts.MaxEndpointsPerTenant, DefaultMaxEndpointsPerTenant),
		eventWake:    make(chan struct{}, 1),
		// Unquoted in LISTEN and NOTIFY: a plain lower-case identifier.
		outboxChannel: outboxChannel,
		bulkRunning:   bulkRunning(opts.BulkRunning),
		bulkEvery:     bulkEvery(opts.BulkRate),
	}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.caches = caches{keys: newCache[*APIKey](s.now), modules: newCache[*Module](s.now)}
	return s, nil
}

// Dialect returns the database kind.
func (s *Store) Dialect() Dialect { return s.dialect }

// Close waits for queued writes, stops the outbox announcer and listener,
// then closes the database pools. No write may start after Close.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.writes != nil {
			close(s.writes)
			<-s.writesDone
		}
		s.writerStmts.close()
		s.endLife()
		s.background.Wait()
	})
	var errs []error
	if s.announcer != nil {
		errs = append(errs, s.announcer.Close())
	}
	pools := []*gorm.DB{s.w}
	if s.r != s.w {
		pools = append(pools, s.r)
	}
	for _, g := range pools {
		if g == nil {
			continue
		}
		if db, err := g.DB(); err == nil {
			errs = append(errs, db.Close())
		}
	}
	if s.heavy != nil {
		errs = append(errs, s.heavy.Close())
	}
	return errors.Join(errs...)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	db, err := s.r.DB()
	if err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", s.dialect, err)
	}
	return nil
}

// Migrate applies every pending migration.
func (s *Store) Migrate(ctx context.Context) error {
	db, err := s.w.DB()
	if err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	var (
		fsys    fs.FS
		dialect goose.Dialect
	)
	switch s.dialect {
	case Postgres:
		fsys, dialect = migrations.Postgres, goose.DialectPostgres
		fsys, _ = fs.Sub(fsys, "postgres")
	default:
		fsys, dialect = migrations.SQLite, goose.DialectSQLite3
		fsys, _ = fs.Sub(fsys, "sqlite")
	}
	p, err := goose.NewProvider(dialect, db, fsys)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return s.backfillStats(ctx)
}

// bind rewrites ? placeholders to PostgreSQL's $n. Queries handed to it
// hold no literal question marks.
func (s *Store) bind(query string) string {
	if s.dialect != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// prepared returns the read pool's prepared statement for query (written
// with ? placeholders), preparing it once.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	db, err := s.r.DB()
	if err != nil {
		return nil, fmt.Errorf("pool: %w", err)
	}
	st, err := db.PrepareContext(ctx, s.bind(query))
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	if prev, loaded := s.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

func (s *Store) shard() int {
	if s.countShards <= 1 {
		return 0
	}
	return rand.IntN(s.countShards)
}

// isUniqueViolation reports whether err is a unique-constraint violation;
// the SQLite driver does not translate it to gorm.ErrDuplicatedKey.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "SQLSTATE 23505") ||
		strings.Contains(msg, "duplicate key value")
}

func notFoundOr(err error, what string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Page is a validated page request.
type Page struct {
	Page  int
	Limit int
}

// Offset returns the number of rows before the page.
func (p Page) Offset() int { return (p.Page - 1) * p.Limit }

type gormDB = gorm.DB
