package pgtemporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/recordhub/recordhub/cmd/internal/visindex"
)

// postgres is where the server's databases live, taken from
// Options.PostgresURL.
type postgres struct {
	url            string // the admin connection, for dropping databases
	host           string
	port           uint16
	user, password string
	adminDB        string // the database the SQL tool connects to to create others
}

func parsePostgres(rawURL string) (postgres, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return postgres{}, fmt.Errorf("pgtemporal: PostgresURL: %w", err)
	}
	// Temporal's postgres12 plugin dials host:port over TCP.
	if strings.HasPrefix(cfg.Host, "/") {
		return postgres{}, fmt.Errorf("pgtemporal: PostgresURL: unix socket %s is not supported; give a TCP host", cfg.Host)
	}
	return postgres{
		url:      rawURL,
		host:     cfg.Host,
		port:     cfg.Port,
		user:     cfg.User,
		password: cfg.Password,
		adminDB:  cfg.Database,
	}, nil
}

func (p postgres) addr() string {
	return strings.TrimSuffix(p.host, ".") + ":" + strconv.Itoa(int(p.port))
}

// schemaSet is one of the server's two databases and the versioned schema
// it is migrated with. The schema directories are embedded in the SQL tool,
// so its version always matches the server's.
type schemaSet struct {
	db, schemaName string
}

// createDatabases creates and migrates the server's databases, both at once,
// with Temporal's SQL tool as its documentation does it: create, then the
// versioning tables (setup-schema -v 0.0), then every versioned step.
func createDatabases(ctx context.Context, sqlTool string, pg postgres, sets ...schemaSet) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		errs = make([]error, len(sets))
	)
	for i, s := range sets {
		wg.Go(func() {
			errs[i] = migrate(ctx, sqlTool, pg, s)
			if errs[i] != nil {
				cancel() // the other one is wasted work now
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func migrate(ctx context.Context, sqlTool string, pg postgres, s schemaSet) error {
	steps := [][]string{
		{"create", "--defaultdb", pg.adminDB},
		{"setup-schema", "-v", "0.0"},
		{"update-schema", "--schema-name", s.schemaName},
	}
	for _, step := range steps {
		if err := runSQLTool(ctx, sqlTool, pg, s.db, step...); err != nil {
			return err
		}
	}
	return nil
}

func runSQLTool(ctx context.Context, sqlTool string, pg postgres, db string, args ...string) error {
	all := append([]string{
		"--plugin", "postgres12",
		"--ep", strings.TrimSuffix(pg.host, "."),
		"--port", strconv.Itoa(int(pg.port)),
		"--user", pg.user,
		"--db", db,
	}, args...)
	cmd := exec.CommandContext(ctx, sqlTool, all...)
	// The password goes through the environment, not the command line that
	// ps shows.
	cmd.Env = append(os.Environ(), "SQL_PASSWORD="+pg.password)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtemporal: temporal-sql-tool --db %s %s: %w\n%s", db, args[0], err, b)
	}
	return nil
}

// dropDatabases drops the databases even if something is still connected
// to them (PostgreSQL 13 and later).
func dropDatabases(ctx context.Context, pg postgres, dbs ...string) error {
	conn, err := pgx.Connect(ctx, pg.url)
	if err != nil {
		return fmt.Errorf("pgtemporal: drop databases: %w", err)
	}
	defer conn.Close(ctx)
	for _, db := range dbs {
		q := "DROP DATABASE IF EXISTS " + pgx.Identifier{db}.Sanitize() + " WITH (FORCE)"
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("pgtemporal: drop database %s: %w", db, err)
		}
	}
	return nil
}

// trimVisibility drops the visibility indexes operators do not search by
// (visindex) from the database db.
func trimVisibility(ctx context.Context, pg postgres, db string) error {
	cfg, err := pgx.ParseConfig(pg.url)
	if err != nil {
		return fmt.Errorf("pgtemporal: %w", err)
	}
	cfg.Database = db
	conn := stdlib.OpenDB(*cfg)
	defer conn.Close()
	if _, err := visindex.Trim(ctx, conn, visindex.Postgres); err != nil {
		return fmt.Errorf("pgtemporal: %w", err)
	}
	return nil
}
