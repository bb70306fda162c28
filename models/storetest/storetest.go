// Package storetest opens migrated stores for tests: a SQLite file in a
// temporary directory, or a fresh schema in the PostgreSQL database named by
// RECORDHUB_TEST_DATABASE_URL (default: the local "test" database).
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recordhub/recordhub/models"
)

// DefaultPostgresURL is the database the tests use when
// RECORDHUB_TEST_DATABASE_URL is unset.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Required reports whether missing services fail tests instead of skipping
// them; CI sets RECORDHUB_TEST_REQUIRE_SERVICES=1.
func Required() bool { return os.Getenv("RECORDHUB_TEST_REQUIRE_SERVICES") == "1" }

// Dialects are the databases every storage test runs on.
var Dialects = []models.Dialect{models.SQLite, models.Postgres}

// SecretBox returns a box with a fixed test key.
func SecretBox(t testing.TB) *models.SecretBox {
	t.Helper()
	box, err := models.NewSecretBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// Open returns a migrated, empty store of the given dialect, closed when
// the test ends. PostgreSQL tests are skipped (or fail, when Required) if
// the server cannot be reached, and skipped by -short.
func Open(t testing.TB, d models.Dialect) *models.Store {
	t.Helper()
	ctx := context.Background()
	var (
		s   *models.Store
		err error
	)
	// A small pool: tests run in parallel against one server.
	opts := models.Options{SecretBox: SecretBox(t), MaxOpenConns: 4}
	switch d {
	case models.Postgres:
		s, err = models.OpenPostgres(ctx, PostgresURL(t), opts)
	default:
		s, err = models.OpenSQLite(ctx, filepath.Join(t.TempDir(), "recordhub.db"), opts)
	}
	if err != nil {
		t.Fatalf("open %s store: %v", d, err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// PostgresURL creates an empty schema for the test and returns a URL whose
// search_path selects it; the schema is dropped when the test ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	// Before the reachability check: -short wins over Required.
	if testing.Short() {
		t.Skip("needs PostgreSQL; skipped by -short")
	}
	base := os.Getenv("RECORDHUB_TEST_DATABASE_URL")
	if base == "" {
		base = DefaultPostgresURL
	}
	conn := adminConn(t, base)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

var (
	reachOnce sync.Once
	reachErr  error
)

func adminConn(t testing.TB, base string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reachOnce.Do(func() {
		c, err := pgx.Connect(ctx, base)
		if err == nil {
			c.Close(ctx)
		}
		reachErr = err
	})
	if reachErr != nil {
		if Required() {
			t.Fatalf("PostgreSQL is required but unreachable at %s: %v", base, reachErr)
		}
		t.Skipf("PostgreSQL unreachable at %s (%v); set RECORDHUB_TEST_DATABASE_URL or start it", base, reachErr)
	}
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect postgres: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// RedisURL returns the Redis the tests use (RECORDHUB_TEST_REDIS_URL, default
// the local server), skipping the test when it cannot be reached unless
// services are Required. The caller checks reachability with its client.
func RedisURL() string {
	if u := os.Getenv("RECORDHUB_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}
