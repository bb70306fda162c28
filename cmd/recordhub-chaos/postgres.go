package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/cmd/internal/procs"
)

// pgUser runs the PostgreSQL server when the harness is root: initdb and
// postgres refuse to run as root.
const pgUser = "postgres"

// postgres is a PostgreSQL cluster of the harness's own, in a temporary
// directory on a free loopback port, so that it can be crashed
// (pg_ctl stop -m immediate) without touching anyone else's.
type postgres struct {
	bin  string // the directory of initdb, postgres and pg_ctl
	dir  string // PGDATA
	port int
	log  *os.File

	mu   sync.Mutex
	proc *procs.Process
}

// findPostgres returns the directory holding initdb, postgres and pg_ctl:
// PATH first, then Debian's /usr/lib/postgresql/<version>/bin.
func findPostgres() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- { // the newest version sorts last
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin")
}

// startPostgres creates a cluster in work/pgdata and starts it.
func startPostgres(ctx context.Context, work string) (*postgres, error) {
	bin, err := findPostgres()
	if err != nil {
		return nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	pg := &postgres{bin: bin, dir: filepath.Join(work, "pgdata"), port: port}
	if err := os.Mkdir(pg.dir, 0o700); err != nil {
		return nil, err
	}
	if err := procs.Chown(pg.dir, pgUser); err != nil {
		return nil, err
	}
	if pg.log, err = os.Create(filepath.Join(work, "postgres.log")); err != nil {
		return nil, err
	}
	if err := pg.run(ctx, "initdb", "-D", pg.dir, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		return nil, err
	}
	// Two API replicas, two workers (20 connections each at most) and
	// Temporal (about 57) need more than the default 100.
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nmax_connections = 300\nfsync = on\n", port)
	f, err := os.OpenFile(filepath.Join(pg.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(conf)
	if err := errors.Join(err, f.Close()); err != nil {
		return nil, err
	}
	if err := pg.start(ctx); err != nil {
		return nil, err
	}
	return pg, nil
}

// run runs one of the cluster's tools as pgUser, its output into the log.
func (pg *postgres) run(ctx context.Context, tool string, args ...string) error {
	p, err := procs.Start(procs.Spec{Path: filepath.Join(pg.bin, tool), Args: args, Out: pg.log, User: pgUser, Dir: os.TempDir()})
	if err != nil {
		return err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		_ = p.Kill()
		return ctx.Err()
	}
	if p.Err() != nil {
		return fmt.Errorf("%s: %w (see %s)", tool, p.Err(), pg.log.Name())
	}
	return nil
}

// URL is an admin connection to database db.
func (pg *postgres) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.port, db)
}

// start runs the server in the foreground as the harness's child and waits
// until it accepts connections.
func (pg *postgres) start(ctx context.Context) error {
	p, err := procs.Start(procs.Spec{Path: filepath.Join(pg.bin, "postgres"), Args: []string{"-D", pg.dir}, Out: pg.log, User: pgUser, Dir: os.TempDir()})
	if err != nil {
		return err
	}
	pg.mu.Lock()
	pg.proc = p
	pg.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := pgx.Connect(cctx, pg.URL("postgres"))
		cancel()
		if err == nil {
			c.Close(ctx)
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("postgres exited at start (%v); see %s", p.Err(), pg.log.Name())
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres on port %d not ready after 60 s: %w", pg.port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// crash stops the server as a power cut would (pg_ctl stop -m immediate:
// no checkpoint, recovery from the WAL at the next start).
func (pg *postgres) crash(ctx context.Context) error {
	if err := pg.run(ctx, "pg_ctl", "stop", "-D", pg.dir, "-m", "immediate", "-w"); err != nil {
		return err
	}
	pg.mu.Lock()
	p := pg.proc
	pg.mu.Unlock()
	select {
	case <-p.Done():
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("postgres still running 30 s after pg_ctl stop -m immediate")
	}
}

// stop shuts the server down cleanly at the end of the run.
func (pg *postgres) stop() error {
	pg.mu.Lock()
	p := pg.proc
	pg.mu.Unlock()
	var err error
	if p != nil {
		// SIGINT is PostgreSQL's fast shutdown.
		_ = p.Signal(syscall.SIGINT)
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			err = p.Kill()
		}
	}
	return errors.Join(err, pg.log.Close())
}
