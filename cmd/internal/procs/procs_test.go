package procs

import (
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models/storetest"
)

func sleeper(t *testing.T, script string, out io.Writer) *Process {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	p, err := Start(Spec{Path: sh, Args: []string{"-c", script}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

// state is the process state as ps prints it (T: stopped).
func state(t *testing.T, pid int) string {
	t.Helper()
	b, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		t.Skipf("ps: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// readyWriter closes ready when the output holds "ready".
type readyWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	ready chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), "ready")
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), "ready") {
		close(w.ready)
	}
	return len(p), nil
}

func TestKill(t *testing.T) {
	p := sleeper(t, "sleep 60", nil)
	if p.Exited() {
		t.Fatal("exited at once")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Fatal("Exited() = false after Kill")
	}
	if ws, ok := p.Err().(*exec.ExitError); !ok || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("Err() = %v, want killed by SIGKILL", p.Err())
	}
	// Signalling a process that is gone is no error.
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("Signal after exit: %v", err)
	}
}

func TestFreezeAndThaw(t *testing.T) {
	// Frozen only once the shell runs its script: a SIGSTOP sent while
	// the process is still starting was once left unseen for a minute.
	out := &readyWriter{ready: make(chan struct{})}
	p := sleeper(t, "echo ready; exec sleep 60", out)
	select {
	case <-out.ready:
	case <-time.After(time.Minute):
		t.Fatal("the shell did not start")
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A process in uninterruptible sleep (D, as sleep is while a busy
	// machine pages it in) stops once it leaves it.
	storetest.Eventually(t, time.Minute, "the process stopped (state T)", func() bool {
		return strings.HasPrefix(state(t, p.Pid()), "T")
	})
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Stop ends it even when frozen again: it sends SIGCONT after SIGTERM.
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The grace is a bound, not a speed: Stop returns once the process
	// has ended.
	if err := p.Stop(time.Minute); err != nil {
		t.Errorf("Stop of a frozen process: %v", err)
	}
	if !p.Exited() {
		t.Error("Exited() = false after Stop")
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	out := &readyWriter{ready: make(chan struct{})}
	p := sleeper(t, "trap '' TERM; echo ready; sleep 60", out)
	select {
	case <-out.ready:
	case <-time.After(time.Minute):
		t.Fatal("the shell did not set its trap")
	}
	err := p.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Errorf("Stop = %v, want it to say the process was killed", err)
	}
	if !p.Exited() {
		t.Error("Exited() = false after Stop")
	}
}
