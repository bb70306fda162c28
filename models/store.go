// Package models holds recordhub's storage: the entities, their validation,
// and the Store through which every query runs.
package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"time"

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
	w, r    *gorm.DB
	dialect Dialect
	box     *SecretBox
	now     func() time.Time
	keys    *keyCache
	// countShards spreads per-module record counters over rows so that
	// concurrent writers on PostgreSQL do not queue on one row lock.
	countShards int
	// pgURL is where the key-change listener connects (PostgreSQL only).
	pgURL string
}

// Options configure a Store.
type Options struct {
	// SecretBox encrypts stored secrets; required.
	SecretBox *SecretBox
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
	// MaxOpenConns bounds the PostgreSQL pool, or the SQLite read pool.
	MaxOpenConns int
}

func gormConfig(now func() time.Time) *gorm.Config {
	return &gorm.Config{
		SkipDefaultTransaction: true,
		PrepareStmt:            true,
		Logger:                 logger.Discard,
		NowFunc:                now,
	}
}

// OpenSQLite opens (creating it when missing) the SQLite database at path.
func OpenSQLite(ctx context.Context, path string, opts Options) (*Store, error) {
	// synchronous=NORMAL in WAL mode survives a process crash; an OS crash
	// or power loss can lose the last commits. Production runs PostgreSQL.
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	s, err := newStore(opts, SQLite, 1)
	if err != nil {
		return nil, err
	}
	if s.w, err = gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: dsn}), gormConfig(s.now)); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if s.r, err = gorm.Open(sqlite.New(sqlite.Config{DriverName: "sqlite", DSN: dsn}), gormConfig(s.now)); err != nil {
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
		readers = 4
	}
	rdb.SetMaxOpenConns(readers)
	rdb.SetMaxIdleConns(readers)
	if err := wdb.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return s, nil
}

// OpenPostgres connects to the PostgreSQL database at url.
func OpenPostgres(ctx context.Context, url string, opts Options) (*Store, error) {
	s, err := newStore(opts, Postgres, 8)
	if err != nil {
		return nil, err
	}
	if s.w, err = gorm.Open(postgres.Open(url), gormConfig(s.now)); err != nil {
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
	if err := db.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	s.pgURL = url
	return s, nil
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
		dialect:     d,
		box:         opts.SecretBox,
		now:         func() time.Time { return now().UTC().Truncate(time.Microsecond) },
		countShards: shards,
	}
	s.keys = newKeyCache(s.now)
	return s, nil
}

// Dialect returns the database kind.
func (s *Store) Dialect() Dialect { return s.dialect }

// Close closes the database pools.
func (s *Store) Close() error {
	var errs []error
	for _, g := range []*gorm.DB{s.w, s.r} {
		if g == nil || (g == s.r && s.r == s.w) {
			continue
		}
		if db, err := g.DB(); err == nil {
			errs = append(errs, db.Close())
		}
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
	return nil
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
