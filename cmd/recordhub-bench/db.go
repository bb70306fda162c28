package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/redis/go-redis/v9"
)

// dbHandle is the bench's own connection to the service's database, for
// seeding; for PostgreSQL it also owns the database it created.
type dbHandle struct {
	db *sql.DB
	// For PostgreSQL: the service's DATABASE_URL, and how to drop it.
	url   string
	admin *sql.DB
	name  string
}

// analyze gathers the planner's statistics of every table of the
// database at url, as autovacuum would after a bulk load.
func analyze(ctx context.Context, url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}

// freshPostgres creates an empty database on the server of serverURL, so
// that every run starts from the same state and leaves nothing behind.
func freshPostgres(ctx context.Context, serverURL string) (*dbHandle, error) {
	admin, err := sql.Open("pgx", serverURL)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", redact(serverURL), err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := admin.PingContext(pingCtx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("postgres at %s is unreachable: %w", redact(serverURL), err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "recordhub_bench_" + hex.EncodeToString(suffix)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		admin.Close()
		return nil, fmt.Errorf("postgres url: %w", err)
	}
	u.Path = "/" + name
	h := &dbHandle{url: u.String(), admin: admin, name: name}
	if h.db, err = sql.Open("pgx", h.url); err != nil {
		_ = h.drop(ctx)
		return nil, err
	}
	return h, nil
}

// drop removes the database freshPostgres created.
func (h *dbHandle) drop(ctx context.Context) error {
	if h.admin == nil {
		return nil
	}
	defer h.admin.Close()
	if h.db != nil {
		h.db.Close()
	}
	if _, err := h.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+h.name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", h.name, err)
	}
	return nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Redacted()
}

// withDatabase returns a PostgreSQL URL naming another database on the same
// server.
func withDatabase(rawURL, db string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("-pg: %w", err)
	}
	u.Path = "/" + db
	return u.String(), nil
}

// pingRedis checks that the Redis the services will share answers.
func pingRedis(ctx context.Context, rawURL string) error {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		return fmt.Errorf("redis at %s does not answer: %w", redact(rawURL), err)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
