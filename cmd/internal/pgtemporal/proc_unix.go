//go:build unix

package pgtemporal

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the server in a process group of its own, so that a
// signal reaches everything it started and none of the test's processes.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the process group led by p; "already gone" is not
// an error.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func terminate(p *os.Process) error { return signalGroup(p, syscall.SIGTERM) }
func kill(p *os.Process) error      { return signalGroup(p, syscall.SIGKILL) }

// lockFile takes an exclusive lock on path, creating it, and returns the
// function that releases it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
