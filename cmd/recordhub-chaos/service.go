package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/cmd/internal/procs"
)

// service is one `recordhub serve --role R` process on a fixed loopback
// address, which it keeps across restarts so that the load generator and
// the scrapes still find it.
type service struct {
	name string // "api 1", "worker 2"
	addr string
	spec procs.Spec
	log  *os.File

	// mu is held across a kill and its restart, so that the supervisor
	// never mistakes a planned death for a crash.
	mu   sync.Mutex
	proc *procs.Process
}

// newService prepares `bin serve --role role` with env (a whole
// environment, RECORDHUB_HTTP_ADDR set here) and its log in logPath.
func newService(name, bin, role, logPath string, env []string) (*service, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env = append(env[:len(env):len(env)], "RECORDHUB_HTTP_ADDR="+addr)
	return &service{name: name, addr: addr, log: log, spec: procs.Spec{
		Path: bin, Args: []string{"serve", "--role", role}, Env: env, Out: log,
	}}, nil
}

func (s *service) url(path string) string { return "http://" + s.addr + path }

// as is a client of the API of this process with key.
func (s *service) as(key string) *client.Client { return client.New(s.url(""), key) }

// start starts the process and waits until path (/healthz, or /readyz at
// the first start) answers 200.
func (s *service) start(ctx context.Context, path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked(ctx, path)
}

func (s *service) startLocked(ctx context.Context, path string) error {
	fmt.Fprintf(s.log, "----- chaos: starting %s at %s\n", s.name, time.Now().Format(time.RFC3339Nano))
	p, err := procs.Start(s.spec)
	if err != nil {
		return err
	}
	s.proc = p
	err = harness.WaitOK(ctx, &http.Client{Timeout: time.Second}, s.url(path), 90*time.Second, p.Exited)
	switch {
	case errors.Is(err, harness.ErrExited):
		return fmt.Errorf("%s exited at start (%v); see %s", s.name, p.Err(), s.log.Name())
	case err != nil:
		return fmt.Errorf("%s not up after 90 s: %w; see %s", s.name, err, s.log.Name())
	}
	return nil
}

// killAndRestart is the fault: SIGKILL, then a new process at once, as an
// orchestrator would start one. It returns the old and new pids.
func (s *service) killAndRestart(ctx context.Context) (oldPid, newPid int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	oldPid = s.proc.Pid()
	if err := s.proc.Kill(); err != nil {
		return oldPid, 0, err
	}
	if err := s.startLocked(ctx, "/healthz"); err != nil {
		return oldPid, 0, err
	}
	return oldPid, s.proc.Pid(), nil
}

// signal sends sig (SIGSTOP, SIGCONT) to the process.
func (s *service) signal(sig syscall.Signal) (pid int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.Pid(), s.proc.Signal(sig)
}

// reviveIfDead restarts a process that exited on its own and says so.
func (s *service) reviveIfDead(ctx context.Context) (revived bool, why string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.proc.Exited() {
		return false, "", nil
	}
	why = fmt.Sprint(s.proc.Err())
	return true, why, s.startLocked(ctx, "/healthz")
}

func (s *service) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.proc.Stop(40 * time.Second)
	s.log.Close()
	return err
}
