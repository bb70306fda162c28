// Package procs starts child processes that a harness must be able to
// crash, freeze and bring back: each runs in a process group of its own (a
// signal reaches everything it started and nothing of the harness's), dies
// with the harness on Linux, and tells when it has exited.
package procs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Spec describes a process to start; Start may be called with the same Spec
// again to bring a process back after a crash.
type Spec struct {
	Path string
	Args []string
	// Env is the whole environment; nil means the harness's own.
	Env []string
	Dir string
	// Out receives stdout and stderr; nil discards them.
	Out io.Writer
	// User runs the process as this user when the harness is root (servers
	// such as PostgreSQL refuse to run as root); "" keeps the harness's.
	User string
}

// Process is one run of a Spec.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it exited; set before done is closed
}

// Start starts the process and returns at once.
func Start(s Spec) (*Process, error) {
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Env, cmd.Dir = s.Env, s.Dir
	if s.Out != nil {
		cmd.Stdout, cmd.Stderr = s.Out, s.Out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	if err := asUser(cmd, s.User); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(s.Path), err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id (and its group's).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err says how the process exited; valid once Done is closed.
func (p *Process) Err() error { return p.err }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process's group; a group that is gone already is
// not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid(), sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("signal %v to %d: %w", sig, p.Pid(), err)
	}
	return nil
}

// Kill sends SIGKILL, as a crash would, and waits until the process is gone.
func (p *Process) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// Stop asks the process to end (SIGTERM, and SIGCONT in case it is frozen),
// kills it if it has not after grace, and waits until it is gone. It
// returns an error only when the process had to be killed.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = p.Signal(syscall.SIGTERM)
	_ = p.Signal(syscall.SIGCONT)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.Kill()
	return fmt.Errorf("pid %d did not stop within %s and was killed", p.Pid(), grace)
}

// Chown gives path to user when the harness is root, so that a process
// started as that user may write there; otherwise it does nothing.
func Chown(path, user string) error {
	uid, gid, ok, err := lookupUser(user)
	if err != nil || !ok {
		return err
	}
	return filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
