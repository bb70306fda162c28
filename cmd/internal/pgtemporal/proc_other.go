//go:build !unix

package pgtemporal

import (
	"errors"
	"os"
	"os/exec"
)

// Without process groups the server is signalled alone; it starts no
// children of its own.
func setProcessGroup(*exec.Cmd) {}

func terminate(p *os.Process) error { return kill(p) }

func kill(p *os.Process) error {
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// lockFile does not lock: concurrent builds then only repeat work, each
// renaming its own complete binary into place.
func lockFile(string) (unlock func(), err error) { return func() {}, nil }
