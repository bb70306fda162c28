package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeRunRunsTheBinary: `make run` builds bin/recordhub and runs it,
// not `go run`, which exits 1 when Ctrl-C stops the program whatever the
// program's own status (it reads the interrupt as its own), so that make
// reported "Error 1" after every clean shutdown. The binary's own status is
// TestInterruptExitsZero's.
func TestMakeRunRunsTheBinary(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command(makeBin, "-n", "--no-print-directory", "run")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; last != "./bin/recordhub serve" {
		t.Errorf("make run's last command is %q, want ./bin/recordhub serve:\n%s", last, out)
	}
	for _, l := range lines {
		if strings.Contains(l, " run ") {
			t.Errorf("make run runs %q: `go run` turns Ctrl-C into exit status 1", l)
		}
	}
}
