package pgtemporal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The packages built into the two binaries; go.mod lists both as tools, which
// keeps their dependencies (urfave/cli) in go.sum.
const (
	serverPackage  = "go.temporal.io/server/cmd/server"
	sqlToolPackage = "go.temporal.io/server/cmd/tools/sql"
	serverModule   = "go.temporal.io/server"
)

// Build makes sure the Temporal server and its SQL tool are built from the
// versions in the calling module's go.mod, and returns their paths. binDir
// caches them ("" means os.UserCacheDir()/recordhub/temporal-<server
// version>); a binary that is already there is not rebuilt, so a binDir must
// only ever hold one server version. The first build compiles the whole
// server (minutes on a small machine); with a warm build cache it takes about
// 20 s. It must run inside the module (a test's or the bench's working
// directory), with the go command on PATH.
func Build(ctx context.Context, binDir string) (serverBin, sqlToolBin string, err error) {
	root, version, err := moduleInfo(ctx)
	if err != nil {
		return "", "", err
	}
	if binDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", "", fmt.Errorf("pgtemporal: no cache directory for the binaries: %w", err)
		}
		binDir = filepath.Join(cache, "recordhub", "temporal-"+version)
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", "", fmt.Errorf("pgtemporal: %w", err)
	}
	serverBin = filepath.Join(binDir, "temporal-server")
	sqlToolBin = filepath.Join(binDir, "temporal-sql-tool")
	if exists(serverBin) && exists(sqlToolBin) {
		return serverBin, sqlToolBin, nil
	}

	// Several test binaries may start at once: one builds, the others wait
	// for it and then find the binaries in place.
	unlock, err := lockFile(filepath.Join(binDir, ".build.lock"))
	if err != nil {
		return "", "", fmt.Errorf("pgtemporal: lock %s: %w", binDir, err)
	}
	defer unlock()
	for _, b := range []struct{ out, pkg string }{
		{serverBin, serverPackage},
		{sqlToolBin, sqlToolPackage},
	} {
		if exists(b.out) {
			continue
		}
		if err := goBuild(ctx, root, b.pkg, b.out); err != nil {
			return "", "", err
		}
	}
	return serverBin, sqlToolBin, nil
}

// moduleInfo returns the calling module's root directory and the version of
// the Temporal server it requires.
func moduleInfo(ctx context.Context) (root, version string, err error) {
	gomod, err := goCmd(ctx, "", "env", "GOMOD")
	if err != nil {
		return "", "", err
	}
	if gomod == "" || gomod == os.DevNull {
		return "", "", errors.New("pgtemporal: not inside a Go module; run from the recordhub repository")
	}
	root = filepath.Dir(gomod)
	version, err = goCmd(ctx, root, "list", "-m", "-f", "{{.Version}}", serverModule)
	if err != nil {
		return "", "", err
	}
	if version == "" {
		return "", "", fmt.Errorf("pgtemporal: %s has no version in %s", serverModule, gomod)
	}
	return root, version, nil
}

// goBuild builds pkg into out, through a temporary name so that nobody ever
// sees half a binary.
func goBuild(ctx context.Context, root, pkg, out string) error {
	tmp := out + ".tmp-" + randomHex(4)
	defer os.Remove(tmp)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, pkg)
	cmd.Dir = root
	// Pure Go, as the Makefile builds everything.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtemporal: go build %s: %w\n%s", pkg, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("pgtemporal: %w", err)
	}
	return nil
}

// goCmd runs the go command in dir and returns its trimmed output.
func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("pgtemporal: go %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(string(out)), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
