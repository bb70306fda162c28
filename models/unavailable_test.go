package models_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// classified is one real error and whether it must read as unavailable.
type classified struct {
	name string
	err  error
	want bool
}

func checkClassified(t *testing.T, cases []classified) {
	t.Helper()
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: the driver returned no error", c.name)
			continue
		}
		t.Logf("%s: %T: %v", c.name, c.err, c.err)
		if got := models.IsUnavailable(c.err); got != c.want {
			t.Errorf("%s: IsUnavailable(%T %q) = %v, want %v", c.name, c.err, c.err, got, c.want)
		}
	}
}

// TestIsUnavailablePostgres classifies errors pgx really returns: a
// database that cannot be reached, or is gone under a statement, is
// unavailable; a statement the database refuses, a bad connection string
// and a call its client cancelled are not.
func TestIsUnavailablePostgres(t *testing.T) {
	db := storetest.NewDB(t, models.Postgres)
	ctx := context.Background()
	var cases []classified
	add := func(name string, err error, want bool) { cases = append(cases, classified{name, err, want}) }

	closedPort := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}()
	withHost := func(host string, params ...string) string {
		u, err := url.Parse(db.DSN)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = host
		q := u.Query()
		for i := 0; i+1 < len(params); i += 2 {
			q.Set(params[i], params[i+1])
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	_, err := pgx.Connect(ctx, withHost(closedPort))
	add("connection refused", err, true)

	_, err = pgx.Connect(ctx, withHost("no-such-host.invalid:5432", "connect_timeout", "5"))
	add("unknown host", err, true)

	hole, through := storetest.NewProxy(t, db)
	hole.BlackHole()
	_, err = pgx.Connect(ctx, withHost(hole.Addr(), "connect_timeout", "1"))
	add("server that accepts and never answers, past connect_timeout", err, true)
	hole.Start()

	u, _ := url.Parse(db.DSN)
	u.Path = "/no_such_database_here"
	_, err = pgx.Connect(ctx, u.String())
	add("database that does not exist (a configuration fault)", err, false)

	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE TABLE uniq (id int PRIMARY KEY)")
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "INSERT INTO uniq VALUES (1), (1)")
	add("unique violation", err, false)
	_, err = conn.Exec(ctx, "SELEKT 1")
	add("syntax error", err, false)

	cctx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error, 1)
	go func() {
		_, err := conn.Exec(cctx, "SELECT pg_sleep(30)")
		cancelled <- err
	}()
	waitForQuery(t, db, "pg_sleep(30)")
	cancel()
	add("statement cancelled by its client", <-cancelled, false)
	conn.Close(ctx)

	conn, err = pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
	add("backend terminated by an administrator (57P01)", err, true)
	_, err = conn.Exec(ctx, "SELECT 1")
	add("statement on the connection the server closed", err, true)

	direct, err := pgx.Connect(ctx, through.DSN)
	if err != nil {
		t.Fatal(err)
	}
	broken := make(chan error, 1)
	go func() {
		_, err := direct.Exec(ctx, "SELECT pg_sleep(30) /* cut */")
		broken <- err
	}()
	waitForQuery(t, db, "/* cut */")
	hole.Stop()
	add("connection broken under a statement", <-broken, true)
	_, err = direct.Exec(ctx, "SELECT 1")
	add("statement on the broken connection", err, true)
	hole.Start()

	// The pool the store uses (database/sql over pgx), through the proxy.
	pool, err := sql.Open("pgx", through.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	go func() {
		_, err := pool.ExecContext(ctx, "SELECT pg_sleep(30) /* broken */")
		broken <- err
	}()
	waitForQuery(t, db, "/* broken */")
	hole.Stop()
	add("pool connection broken under a statement", <-broken, true)
	_, err = pool.ExecContext(ctx, "SELECT 1")
	add("pool whose server is down", err, true)
	hole.Start()

	for _, code := range []string{"08006", "08001", "57P01", "57P02", "57P03", "53300"} {
		add("SQLSTATE "+code, fmt.Errorf("query: %w", &pgconn.PgError{Code: code}), true)
	}
	for _, code := range []string{"23505", "23503", "40001", "57014", "42P01", "28P01", "53100"} {
		add("SQLSTATE "+code, fmt.Errorf("query: %w", &pgconn.PgError{Code: code}), false)
	}
	checkClassified(t, cases)
}

// waitForQuery waits until PostgreSQL runs a statement containing marker
// on another connection.
func waitForQuery(t *testing.T, db *storetest.DB, marker string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	storetest.Eventually(t, 10*time.Second, "a statement with "+marker+" to start", func() bool {
		var n int
		err := conn.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND strpos(query, $1) > 0", marker).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
}

// TestIsUnavailableSQLite classifies errors modernc.org/sqlite really
// returns: a lock another connection holds past the busy timeout, a file
// that cannot be opened and a full database are unavailable; constraints,
// bad statements and a cancelled call are not.
func TestIsUnavailableSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	open := func(t *testing.T, dsn string) *sql.DB {
		t.Helper()
		h, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	holder := open(t, "file:"+path+"?_pragma=journal_mode(WAL)")
	if _, err := holder.ExecContext(ctx, "CREATE TABLE uniq (id INTEGER PRIMARY KEY, b BLOB)"); err != nil {
		t.Fatal(err)
	}
	var cases []classified
	add := func(name string, err error, want bool) { cases = append(cases, classified{name, err, want}) }

	_, err := holder.ExecContext(ctx, "INSERT INTO uniq (id) VALUES (1), (1)")
	add("unique violation", err, false)
	_, err = holder.ExecContext(ctx, "SELEKT 1")
	add("syntax error", err, false)

	lock, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	waiter := open(t, "file:"+path+"?_pragma=busy_timeout(50)&_txlock=immediate")
	_, err = waiter.ExecContext(ctx, "INSERT INTO uniq (id) VALUES (2)")
	add("write lock held by another connection past the busy timeout", err, true)
	lock.ExecContext(ctx, "ROLLBACK")
	lock.Close()

	_, err = open(t, "file:"+filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")).ExecContext(ctx, "SELECT 1")
	add("file that cannot be opened", err, true)

	small := open(t, "file:"+filepath.Join(t.TempDir(), "small.db"))
	small.SetMaxOpenConns(1)
	if _, err := small.ExecContext(ctx, "CREATE TABLE b (v BLOB); PRAGMA max_page_count = 8"); err != nil {
		t.Fatal(err)
	}
	_, err = small.ExecContext(ctx, "INSERT INTO b VALUES (zeroblob(1000000))")
	add("database full", err, true)

	// The statement never ends by itself: only its client's cancellation
	// stops it.
	cctx, cancel := context.WithCancel(ctx)
	stop := time.AfterFunc(50*time.Millisecond, cancel)
	defer stop.Stop()
	_, err = holder.ExecContext(cctx, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT count(*) FROM n")
	add("statement cancelled by its client", err, false)
	checkClassified(t, cases)
}

// TestIsUnavailableEdges: a client's cancellation wins over a connection
// error it caused, and the store's own errors are not the database's.
func TestIsUnavailableEdges(t *testing.T) {
	checkClassified(t, []classified{
		{"client cancellation wrapped in a network error", fmt.Errorf("read: %w", errors.Join(&net.OpError{Op: "read", Err: errors.New("reset")}, context.Canceled)), false},
		{"not found", models.ErrNotFound, false},
		{"a plain error", errors.New("boom"), false},
	})
	if models.IsUnavailable(nil) {
		t.Error("IsUnavailable(nil) = true")
	}
}
