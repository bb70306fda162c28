package harness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ServiceEnv is the harness's environment without any recordhub, database,
// Redis or Temporal setting of the caller's (a REDIS_URL would switch the
// limiter to Redis, a DATABASE_URL the database), plus set.
func ServiceEnv(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "RECORDHUB_") || strings.HasPrefix(name, "TEMPORAL_") || name == "DATABASE_URL" || name == "REDIS_URL" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr returns a loopback address, 127.0.0.1:port, that was free a
// moment ago.
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(port), nil
}

// NewSecretKey is a RECORDHUB_SECRET_KEY: 32 random bytes, base64.
func NewSecretKey() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

// GoCommand is the go command: $GO, else go.
func GoCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// ModuleRoot returns the directory of the main module's go.mod; hint says
// how to run the tool inside it.
func ModuleRoot(ctx context.Context, hint string) (string, error) {
	out, err := exec.CommandContext(ctx, GoCommand(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New(hint)
	}
	return filepath.Dir(gomod), nil
}

// ErrExited is WaitOK's error when the process it waited for exited.
var ErrExited = errors.New("exited")

// WaitOK polls url every 100 ms until it answers 200. It gives up with
// ErrExited as soon as exited reports the process gone, with the last
// attempt's error once limit has passed, and with ctx's error when ctx
// ends.
func WaitOK(ctx context.Context, hc *http.Client, url string, limit time.Duration, exited func() bool) error {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := get200(ctx, hc, url)
		if err == nil {
			return nil
		}
		if exited != nil && exited() {
			return ErrExited
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func get200(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", req.URL.Path, resp.Status)
	}
	return nil
}
