package pgtemporal

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/models/storetest"
)

// defaultPostgresURL is used when RECORDHUB_TEST_DATABASE_URL is unset; any
// database of the server will do, the test creates its own.
const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// postgresURL returns the PostgreSQL server to use, skipping the test when it
// is unreachable unless CI requires services (as models/storetest does).
func postgresURL(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL and a Temporal server build; skipped by -short")
	}
	u := os.Getenv("RECORDHUB_TEST_DATABASE_URL")
	if u == "" {
		u = defaultPostgresURL
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		if os.Getenv("RECORDHUB_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("PostgreSQL is required but unreachable at %s: %v", u, err)
		}
		t.Skipf("PostgreSQL unreachable at %s (%v); set RECORDHUB_TEST_DATABASE_URL or start it", u, err)
	}
	c.Close(ctx)
	return u
}

func greetWorkflow(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var greeting string
	err := workflow.ExecuteActivity(ctx, greetActivity, name).Get(ctx, &greeting)
	return greeting, err
}

func greetActivity(_ context.Context, name string) (string, error) {
	return "hello " + name, nil
}

// runGreeting runs one workflow to completion and checks its result.
func runGreeting(ctx context.Context, t *testing.T, c client.Client, taskQueue, name string) {
	t.Helper()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: taskQueue}, greetWorkflow, name)
	if err != nil {
		t.Fatalf("start workflow: %v", err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow %s: %v", run.GetID(), err)
	}
	if want := "hello " + name; got != want {
		t.Errorf("workflow result = %q, want %q", got, want)
	}
}

func TestServer(t *testing.T) {
	pgURL := postgresURL(t)
	// Generous: the first Build on a machine compiles the whole server.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()

	start := time.Now()
	srv, err := Start(ctx, Options{PostgresURL: pgURL, Log: t.Output(), LogLevel: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("started %s (namespace %s, databases %v) in %v", srv.Address(), srv.Namespace(), srv.dbs, time.Since(start))

	c, err := client.DialContext(ctx, client.Options{
		HostPort:  srv.Address(),
		Namespace: srv.Namespace(),
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	taskQueue := "pgtemporal-test-" + randomHex(4)
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(greetWorkflow)
	w.RegisterActivity(greetActivity)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	start = time.Now()
	runGreeting(ctx, t, c, taskQueue, "first")
	t.Logf("first workflow took %v", time.Since(start))

	// An outage: the server is gone, then back on the same address with the
	// same history.
	start = time.Now()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	storetest.Eventually(t, 10*time.Second, "CheckHealth fails after Kill", func() bool {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := c.CheckHealth(hctx, &client.CheckHealthRequest{})
		return err != nil
	})
	t.Logf("killed and seen down in %v", time.Since(start))
	start = time.Now()
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted in %v", time.Since(start))
	storetest.Eventually(t, 30*time.Second, "CheckHealth answers after Restart", func() bool {
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := c.CheckHealth(hctx, &client.CheckHealthRequest{})
		return err == nil
	})
	start = time.Now()
	runGreeting(ctx, t, c, taskQueue, "second")
	t.Logf("second workflow took %v", time.Since(start))

	w.Stop()
	start = time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(start))
	if conn, err := net.DialTimeout("tcp", srv.Address(), time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Stop", srv.Address())
	}
	pg, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)
	var left int
	if err := pg.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", srv.dbs).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d of databases %v left after Stop", left, srv.dbs)
	}
}

func TestStartRejectsBadDynamicConfig(t *testing.T) {
	pgURL := postgresURL(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	tests := []struct {
		name   string
		config map[string]any
		want   string
	}{
		{"misspelt key", map[string]any{"matching.enableFairnes": true}, `unregistered key "matching.enablefairnes"`},
		{"wrong type", map[string]any{"matching.enableFairness": "yes please"}, `key "matching.enablefairness"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := Start(ctx, Options{PostgresURL: pgURL, DynamicConfig: tt.config})
			if err == nil {
				srv.Stop()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start error = %v, want it to contain %s", err, tt.want)
			}
		})
	}
}

func TestLogTail(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"empty", nil, ""},
		{"partial line", []string{"a", "b"}, "ab"},
		{"lines split across writes", []string{"one\ntw", "o\nthr"}, "one\ntwo\nthr"},
		{"only the last three", []string{"1\n2\n3\n4\n", "5\n"}, "3\n4\n5\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all strings.Builder
			tail := newLogTail(&all, 3)
			for _, w := range tt.writes {
				tail.Write([]byte(w))
			}
			if diff := cmp.Diff(tail.String(), tt.want); diff != "" {
				t.Errorf("tail (-got +want):\n%s", diff)
			}
			if got, want := all.String(), strings.Join(tt.writes, ""); got != want {
				t.Errorf("passed on %q, want %q", got, want)
			}
		})
	}
}
