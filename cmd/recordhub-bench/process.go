package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
)

// process is a child the bench started and must stop.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set when done is closed
	rss  *rssSampler
}

func (p *process) wait() {
	p.err = p.cmd.Wait()
	if p.rss != nil {
		p.rss.stop()
	}
	close(p.done)
}

// stop asks the process to finish (SIGTERM) and kills it if it has not
// after grace.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("pid %d did not stop within %s and was killed", p.cmd.Process.Pid, grace)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
		return nil
	}
	return p.err
}

// startPing starts the bare handler: this binary again, with "ping".
func startPing(ctx context.Context) (*process, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("find own binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "ping", "-addr", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start bare handler: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addr <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go p.wait()
	select {
	case a := <-addr:
		if a == "" {
			_ = p.stop(time.Second)
			return nil, "", errors.New("the bare handler printed no address")
		}
		return p, a, nil
	case <-time.After(10 * time.Second):
		_ = p.stop(time.Second)
		return nil, "", errors.New("the bare handler did not start within 10s")
	}
}

// buildService builds ./cmd/recordhub into dir as name, with the build
// tags given.
func buildService(ctx context.Context, root, dir, name string, tags ...string) (string, error) {
	bin := filepath.Join(dir, name)
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "./cmd/recordhub")
	cmd := exec.CommandContext(ctx, harness.GoCommand(), args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/recordhub: %w\n%s", err, out)
	}
	return bin, nil
}
