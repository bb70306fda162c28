// Package pgtemporal runs a real Temporal server as a separate process with
// PostgreSQL persistence, for end-to-end tests and the load harness: the
// production shape (an external TEMPORAL_ADDRESS), without Docker.
//
// Start builds the server from the version in go.mod (cached, see Build),
// creates two fresh databases, writes a config with free loopback ports,
// starts the server in its own process group and waits until the namespace
// is usable. Stop ends the process and drops the databases.
package pgtemporal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	// retention is the namespace's workflow retention.
	retention = 72 * time.Hour
	// stopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	stopTimeout = 10 * time.Second
	// logLines is how much of the server's log a failed start shows.
	logLines = 30
)

// Options configure Start. Only PostgresURL is required.
type Options struct {
	// PostgresURL is an admin connection to a PostgreSQL server (13 or
	// later, over TCP), allowed to create databases, e.g.
	// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable.
	PostgresURL string
	// BinDir caches the built binaries; "" means
	// os.UserCacheDir()/recordhub/temporal-<server version>.
	BinDir string
	// Log receives the server's stdout and stderr; nil discards them.
	Log io.Writer
	// LogLevel is the server's log level: debug, info, warn or error;
	// "" means info.
	LogLevel string
	// Namespace is registered at start; "" means "default".
	Namespace string
	// MaxConns bounds the connections of each of the server's pools to its
	// main database (half as many to visibility); 0 means 20, as in
	// Temporal's development config. The server holds several such pools:
	// about 57 connections at 20. Tests that share one PostgreSQL server
	// lower it.
	MaxConns int
	// DynamicConfig holds extra dynamic config keys, each with one
	// constraint-free value, as they would appear under "value:" in
	// Temporal's dynamic config YAML. matching.enableFairness is true unless
	// set here. Start fails on a key the server does not know or a value of
	// the wrong type (the server's own validate-dynamic-config).
	DynamicConfig map[string]any
	// TrimVisibility drops the visibility indexes that recordhub's
	// operators do not search by, as the operators' document advises
	// (package visindex), before the server starts.
	TrimVisibility bool
	// PprofPort, when not 0, serves Go's profiler on 127.0.0.1 at that
	// port (/debug/pprof/), for the bench's profiles of the server.
	PprofPort int
}

// Server is a Temporal server process. Its methods are safe for concurrent
// use.
type Server struct {
	serverBin  string
	configFile string
	dir        string // temporary: the config files
	pg         postgres
	dbs        []string
	addr       string
	namespace  string
	log        *logTail

	mu      sync.Mutex
	proc    *process // nil when not running
	stopped bool
}

// process is one run of the server binary.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // how it exited, set before done is closed
}

// Start creates the databases and starts a server on free loopback ports,
// returning once the namespace is registered and answers. ctx bounds the
// whole start, including a first Build; on failure everything is cleaned up
// and the error holds the end of the server's log.
func Start(ctx context.Context, o Options) (*Server, error) {
	pg, err := parsePostgres(o.PostgresURL)
	if err != nil {
		return nil, err
	}
	serverBin, sqlTool, err := Build(ctx, o.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtemporal-")
	if err != nil {
		return nil, fmt.Errorf("pgtemporal: %w", err)
	}
	db := "rh_temporal_" + randomHex(6)
	s := &Server{
		serverBin:  serverBin,
		configFile: filepath.Join(dir, "config.yaml"),
		dir:        dir,
		pg:         pg,
		dbs:        []string{db, db + "_vis"},
		namespace:  cmp.Or(o.Namespace, "default"),
	}
	if err := s.start(ctx, o, sqlTool); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, o Options, sqlTool string) error {
	dynamicConfig := filepath.Join(s.dir, "dynamicconfig.yaml")
	if err := writeDynamicConfig(dynamicConfig, o.DynamicConfig); err != nil {
		return err
	}
	if err := checkDynamicConfig(ctx, s.serverBin, dynamicConfig); err != nil {
		return err
	}
	err := createDatabases(ctx, sqlTool, s.pg,
		schemaSet{db: s.dbs[0], schemaName: "postgresql/v12/temporal"},
		schemaSet{db: s.dbs[1], schemaName: "postgresql/v12/visibility"},
	)
	if err != nil {
		return err
	}
	if o.TrimVisibility {
		if err := trimVisibility(ctx, s.pg, s.dbs[1]); err != nil {
			return err
		}
	}
	// Between releasing the ports and the server binding them, another
	// process may take one: then try again on other ports.
	for attempt := 1; ; attempt++ {
		p, release, err := freePorts()
		if err != nil {
			return err
		}
		s.addr = "127.0.0.1:" + strconv.Itoa(p.FrontendGRPC)
		s.log = newLogTail(o.Log, logLines)
		err = writeConfig(s.configFile, serverConfig{
			Ports:              p,
			Shards:             NumHistoryShards,
			LogLevel:           cmp.Or(o.LogLevel, "info"),
			PostgresAddr:       s.pg.addr(),
			User:               s.pg.user,
			Password:           s.pg.password,
			DB:                 s.dbs[0],
			VisibilityDB:       s.dbs[1],
			DynamicConfigFile:  dynamicConfig,
			MaxConns:           cmp.Or(o.MaxConns, 20),
			VisibilityMaxConns: max(cmp.Or(o.MaxConns, 20)/2, 2),
			PprofPort:          o.PprofPort,
		})
		release()
		if err != nil {
			return err
		}
		err = s.launch(ctx, true)
		if err == nil || attempt == 3 || !strings.Contains(s.log.String(), "address already in use") {
			return err
		}
	}
}

// Address is the frontend's gRPC address (host:port), for client.Options.
func (s *Server) Address() string { return s.addr }

// Databases returns the names of the server's main and visibility
// databases.
func (s *Server) Databases() (main, visibility string) { return s.dbs[0], s.dbs[1] }

// Namespace is the namespace Start registered.
func (s *Server) Namespace() string { return s.namespace }

// Kill ends the server with SIGKILL, as a crash or an outage would, and
// returns once it is gone. Restart brings it back.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return nil
	}
	s.proc = nil
	if err := kill(p.cmd.Process); err != nil {
		return fmt.Errorf("pgtemporal: kill: %w", err)
	}
	<-p.done
	return nil
}

// Restart starts the server again, on the same ports and databases, and
// waits until the namespace answers. A running server is stopped first
// (SIGTERM).
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("pgtemporal: restart after Stop")
	}
	if p := s.proc; p != nil {
		s.proc = nil
		if err := p.stop(stopTimeout); err != nil {
			return err
		}
	}
	return s.launchLocked(ctx, false)
}

// Stop ends the server (SIGTERM, then SIGKILL if it has not exited after
// stopTimeout) and drops its databases. Calling it again does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	if p := s.proc; p != nil {
		s.proc = nil
		errs = append(errs, p.stop(stopTimeout))
	}
	// Stop has no context of its own: it runs from t.Cleanup and deferred
	// calls, after the caller's context may be gone. No deadline either:
	// DROP DATABASE ends, if slowly on a busy machine (it took over 30 s
	// once), and a caller that must bound it bounds the whole process.
	errs = append(errs, dropDatabases(context.Background(), s.pg, s.dbs...))
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}

func (s *Server) launch(ctx context.Context, register bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.launchLocked(ctx, register)
}

// launchLocked starts the process and waits until it serves the namespace,
// registering it first when asked. On failure the process is killed.
func (s *Server) launchLocked(ctx context.Context, register bool) error {
	cmd := exec.Command(s.serverBin, "--config-file", s.configFile, "--allow-no-auth", "start")
	cmd.Dir = s.dir
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtemporal: start server: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := s.waitReady(ctx, p, register); err != nil {
		kill(cmd.Process)
		<-p.done
		return fmt.Errorf("pgtemporal: server at %s not ready: %w\nlast lines of its log:\n%s", s.addr, err, s.log)
	}
	s.proc = p
	return nil
}

// waitReady waits until the frontend answers, registers the namespace when
// asked, and waits until the namespace can be described.
func (s *Server) waitReady(ctx context.Context, p *process, register bool) error {
	var c client.Client
	err := retry(ctx, p, func(ctx context.Context) (err error) {
		c, err = client.DialContext(ctx, client.Options{
			HostPort:  s.addr,
			Namespace: s.namespace,
			Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer c.Close()
	if register {
		err := retry(ctx, p, func(ctx context.Context) error {
			_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
				Namespace:                        s.namespace,
				WorkflowExecutionRetentionPeriod: durationpb.New(retention),
			})
			if _, ok := errors.AsType[*serviceerror.NamespaceAlreadyExists](err); ok {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("register namespace %s: %w", s.namespace, err)
		}
	}
	err = retry(ctx, p, func(ctx context.Context) error {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.namespace})
		return err
	})
	if err != nil {
		return fmt.Errorf("describe namespace %s: %w", s.namespace, err)
	}
	return nil
}

// retry calls f, each call bounded to a few seconds, until it succeeds, the
// process exits or ctx ends; the error then says why and what f said last.
func retry(ctx context.Context, p *process, f func(context.Context) error) error {
	const (
		attempt = 3 * time.Second
		pause   = 100 * time.Millisecond
	)
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("server exited (%v); last error: %w", p.err, err)
		case <-ctx.Done():
			return fmt.Errorf("%w; last error: %w", context.Cause(ctx), err)
		case <-time.After(pause):
		}
	}
}

// stop sends SIGTERM, then SIGKILL if the process outlives timeout, and
// waits for it to exit.
func (p *process) stop(timeout time.Duration) error {
	if err := terminate(p.cmd.Process); err != nil {
		return fmt.Errorf("pgtemporal: stop: %w", err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	if err := kill(p.cmd.Process); err != nil {
		return fmt.Errorf("pgtemporal: stop: %w", err)
	}
	<-p.done
	return nil
}
