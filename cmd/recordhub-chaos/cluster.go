package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/cmd/internal/pgtemporal"
	"github.com/recordhub/recordhub/models"
)

// taskQueue is the services' RECORDHUB_TEMPORAL_TASK_QUEUE.
const taskQueue = "recordhub-chaos"

// stack is the production shape the harness runs and breaks: its own
// PostgreSQL (for recordhub and Temporal), its own Redis, one Temporal
// server, API replicas and workers, and the receiver.
type stack struct {
	work     string
	bin      string // recordhub, built -tags noembedtemporal
	env      []string
	pg       *postgres
	redis    *redisServer
	temporal *pgtemporal.Server
	apis     []*service
	workers  []*service
	receiver *receiver
	adminKey string
}

// startStack starts everything; on failure what started is stopped.
func startStack(ctx context.Context, o options, work string, logf logFunc) (_ *stack, err error) {
	s := &stack{work: work}
	defer func() {
		if err != nil {
			s.stop(logf)
		}
	}()
	root, err := harness.ModuleRoot(ctx, "run the harness inside the recordhub module (make chaos)")
	if err != nil {
		return nil, err
	}
	logf("building ./cmd/recordhub -tags noembedtemporal ...")
	s.bin = filepath.Join(work, "recordhub")
	build := exec.CommandContext(ctx, "go", "build", "-tags", "noembedtemporal", "-o", s.bin, "./cmd/recordhub")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/recordhub: %w\n%s", err, out)
	}

	logf("starting PostgreSQL (a cluster of its own) and Redis ...")
	if s.pg, err = startPostgres(ctx, work); err != nil {
		return nil, err
	}
	if err := createDatabase(ctx, s.pg.URL("postgres"), "recordhub"); err != nil {
		return nil, err
	}
	if s.redis, err = startRedis(ctx, work); err != nil {
		return nil, err
	}
	tlog, err := os.Create(filepath.Join(work, "temporal.log"))
	if err != nil {
		return nil, err
	}
	logf("starting Temporal on that PostgreSQL (built once from the module cache, then cached) ...")
	s.temporal, err = pgtemporal.Start(ctx, pgtemporal.Options{PostgresURL: s.pg.URL("postgres"), Log: tlog, LogLevel: "warn"})
	if err != nil {
		return nil, err
	}
	if s.receiver, err = startReceiver(o.failShare); err != nil {
		return nil, err
	}

	s.adminKey = models.NewAPIKeySecret()
	set := map[string]string{
		"DATABASE_URL":                  s.pg.URL("recordhub"),
		"REDIS_URL":                     s.redis.URL(),
		"TEMPORAL_ADDRESS":              s.temporal.Address(),
		"TEMPORAL_NAMESPACE":            s.temporal.Namespace(),
		"RECORDHUB_TEMPORAL_TASK_QUEUE": taskQueue,
		"RECORDHUB_SECRET_KEY":          harness.NewSecretKey(),
		"RECORDHUB_BOOTSTRAP_ADMIN_KEY": s.adminKey,
		"RECORDHUB_WEBHOOK_ALLOW_CIDRS": "127.0.0.1/32",
		"RECORDHUB_DATA_DIR":            filepath.Join(work, "data"),
	}
	if o.retryInitial > 0 {
		set["RECORDHUB_WEBHOOK_RETRY_INITIAL"] = o.retryInitial.String()
	}
	s.env = harness.ServiceEnv(set)
	if err := os.Mkdir(set["RECORDHUB_DATA_DIR"], 0o700); err != nil {
		return nil, err
	}

	// The first API replica migrates the database before anyone else
	// opens it.
	for i := range o.apis {
		api, err := newService(fmt.Sprintf("api %d", i+1), s.bin, "api", filepath.Join(work, fmt.Sprintf("api%d.log", i+1)), s.env)
		if err != nil {
			return nil, err
		}
		s.apis = append(s.apis, api)
		logf("starting serve --role api (%s) on %s ...", api.name, api.addr)
		if err := api.start(ctx, "/readyz"); err != nil {
			return nil, err
		}
	}
	for i := range o.workers {
		w, err := newService(fmt.Sprintf("worker %d", i+1), s.bin, "worker", filepath.Join(work, fmt.Sprintf("worker%d.log", i+1)), s.env)
		if err != nil {
			return nil, err
		}
		s.workers = append(s.workers, w)
		logf("starting serve --role worker (%s) ...", w.name)
		if err := w.start(ctx, "/readyz"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// tenants makes the load's two tenants: the bootstrap tenant and one made
// with the CLI, as an operator would.
func (s *stack) tenants(ctx context.Context) ([]tenant, error) {
	keyB, err := harness.CreateTenant(ctx, s.bin, s.env, "chaos-b")
	if err != nil {
		return nil, err
	}
	var ts []tenant
	for _, t := range []struct{ name, key string }{{"a", s.adminKey}, {"b", keyB}} {
		tn, err := setUpTenant(ctx, s.apis[0], t.name, t.key, s.receiver.url)
		if err != nil {
			return nil, err
		}
		ts = append(ts, tn)
	}
	return ts, nil
}

// stop stops everything that started, services first.
func (s *stack) stop(logf logFunc) {
	for _, svc := range append(append([]*service(nil), s.apis...), s.workers...) {
		if err := svc.stop(); err != nil {
			logf("stopping %s: %v", svc.name, err)
		}
	}
	if s.receiver != nil {
		s.receiver.close()
	}
	if s.temporal != nil {
		if err := s.temporal.Stop(); err != nil {
			logf("stopping Temporal: %v", err)
		}
	}
	if s.redis != nil {
		if err := s.redis.stop(); err != nil {
			logf("stopping Redis: %v", err)
		}
	}
	if s.pg != nil {
		if err := s.pg.stop(); err != nil {
			logf("stopping PostgreSQL: %v", err)
		}
	}
}

func createDatabase(ctx context.Context, adminURL, name string) error {
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to the harness's PostgreSQL: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// logFunc prints one line of the harness's log.
type logFunc func(format string, args ...any)

// newLog returns a logFunc that stamps each line with the time of day and
// the seconds since start.
func newLog(w interface{ Write([]byte) (int, error) }, start time.Time) logFunc {
	return func(format string, args ...any) {
		now := time.Now()
		fmt.Fprintf(w, "%s +%6.1fs  %s\n", now.Format("15:04:05.000"), now.Sub(start).Seconds(), fmt.Sprintf(format, args...))
	}
}
