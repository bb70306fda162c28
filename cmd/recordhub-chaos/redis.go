package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/cmd/internal/procs"
)

// redisServer is a Redis of the harness's own on a free loopback port,
// without persistence: stopping it loses what it held, as a Redis without
// persistence does.
type redisServer struct {
	spec procs.Spec
	port int

	mu   sync.Mutex
	proc *procs.Process
}

func startRedis(ctx context.Context, work string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server is not on PATH (apt-get install redis-server)")
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(work, "redis.log"))
	if err != nil {
		return nil, err
	}
	r := &redisServer{port: port, spec: procs.Spec{
		Path: bin,
		Args: []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", work},
		Out:  log,
	}}
	return r, r.start(ctx)
}

// URL is what REDIS_URL says.
func (r *redisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// start starts the server and waits until its port accepts connections.
func (r *redisServer) start(ctx context.Context) error {
	p, err := procs.Start(r.spec)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("redis-server exited at start: %v", p.Err())
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("redis-server on %s not ready after 20 s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill ends the server with SIGKILL.
func (r *redisServer) kill() error {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	return p.Kill()
}

func (r *redisServer) stop() error {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	return p.Stop(10 * time.Second)
}
