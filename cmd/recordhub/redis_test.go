package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// startRedis runs a redis-server of the test's own on a free port (never the
// shared one, which other tests use) and returns its URL and process. The
// test is skipped when redis-server is not installed, unless CI requires
// the services.
func startRedis(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs redis-server; skipped by -short")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if storetest.Required() {
			t.Fatalf("redis-server is required but not on PATH: %v", err)
		}
		t.Skipf("redis-server not on PATH (%v); install it to run this test", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("redis-server's output:\n%s", out.String())
		}
	})
	storetest.Eventually(t, 10*time.Second, "redis-server on "+addr+" to answer PING", func() bool { return answersPing(addr) })
	return "redis://" + addr, cmd
}

// answersPing speaks RESP by hand, so that waiting for the server writes
// nothing through go-redis's process-wide logger.
func answersPing(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	n, _ := io.ReadFull(c, buf)
	return string(buf[:n]) == "+PONG\r\n"
}

// TestRedisOutage kills the limiter's Redis under a running service: calls
// keep answering 200 (the limiter fails open) and each costs at most one
// dial and no retry, readiness names Redis, and go-redis's own messages
// land in the JSON log.
func TestRedisOutage(t *testing.T) {
	url, redisCmd := startRedis(t)
	cfg := testConfig(t, models.SQLite)
	cfg.BootstrapAdminKey = "rh_redis_" + strings.Repeat("r", 30)
	cfg.RedisURL = url
	var stderr syncBuffer
	var opts *redis.Options
	base, stop := startServiceEnv(t, cfg, Env{Stdout: io.Discard, Stderr: &stderr, Redis: func(c *redis.Client) { opts = c.Options() }})
	key := cfg.BootstrapAdminKey

	// What made an outage cost each call 1.7 s: go-redis's three command
	// retries and five dial attempts, and socket waits deaf to the
	// limiter's deadline. The client the service built must have none
	// (go-redis keeps "no retries", -1 in the options given, as 0).
	got := []any{opts.MaxRetries, opts.DialerRetries, opts.ContextTimeoutEnabled}
	if diff := cmp.Diff([]any{0, 1, true}, got); diff != "" {
		t.Errorf("the limiter's client: retries, dial retries, context timeouts (-want +got):\n%s", diff)
	}

	if st, body := call(t, "GET", base+"/api/modules", key, ""); st != 200 {
		t.Fatalf("GET /api/modules with Redis up: %d %v", st, body)
	}
	if st, body := call(t, "GET", base+"/readyz", "", ""); st != 200 {
		t.Fatalf("readyz with Redis up: %d %v", st, body)
	}

	if err := redisCmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	redisCmd.Wait()

	const n = 20
	for i := range n {
		st, body := call(t, "GET", base+"/api/modules", key, "")
		if st != 200 {
			t.Errorf("call %d with Redis down: %d %v, want 200 (the limiter fails open)", i+1, st, body)
		}
	}

	st, body := call(t, "GET", base+"/readyz", "", "")
	checks, _ := body["checks"].(map[string]any)
	if st != 503 || checks["redis"] != "unavailable" {
		t.Errorf("readyz with Redis down: %d %v, want 503 with checks.redis unavailable", st, body)
	}

	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	// No clock: how each call failed tells. Without retries a call ends on
	// its refused connection (or, once go-redis stops dialing a server
	// that keeps refusing, on the last refusal) at once; a call that
	// retried or waited out its dial attempts' backoffs runs into the
	// limiter's deadline instead. A loaded machine may hold a call up past
	// that deadline, so most, not all, must end refused. Each dial that
	// failed must have been a single attempt: go-redis's five with backoffs
	// between them, and its three retries, made each call cost 1.7 s.
	var refused, otherwise, dialLines int
	var errs, retriedDials []string
	for _, l := range logLines(t, stderr.String()) {
		switch l["msg"] {
		case "redis":
			text, _ := l["text"].(string)
			if strings.Contains(text, "failed to dial") {
				dialLines++
				if !strings.Contains(text, "after 1 attempts") {
					retriedDials = append(retriedDials, text)
				}
			}
		case "rate limiter failed; letting the request through":
			e, _ := l["error"].(string)
			errs = append(errs, e)
			if strings.Contains(e, "connection refused") {
				refused++
			} else {
				otherwise++
			}
		}
	}
	t.Logf("with Redis down: %d limiter failures ended refused, %d otherwise; %d failed dials logged", refused, otherwise, dialLines)
	if len(retriedDials) > 0 {
		t.Errorf("%d of %d failed dials were tried more than once, want none: %q", len(retriedDials), dialLines, retriedDials[0])
	}
	if refused+otherwise < n {
		t.Errorf("%d limiter-failure warnings for %d calls with Redis down:\n%s", refused+otherwise, n, stderr.String())
	}
	if otherwise > 0 && refused <= otherwise {
		t.Errorf("%d of %d limiter failures ended on a refused connection, want most (the others ran into the limiter's deadline); first: %q", refused, refused+otherwise, errs[0])
	}
	// go-redis logs each failed dial ("connection pool: failed to dial"); with
	// SetLogger those lines are JSON records with msg "redis".
	if dialLines == 0 {
		t.Errorf("no go-redis message went through slog:\n%s", stderr.String())
	}
}

// TestRedisDownAtStart: a Redis that refuses connections stops the start
// with an error naming it and the refusal: the check failed on the refusal
// itself, not by waiting out its 2 s (no clock needed to tell).
func TestRedisDownAtStart(t *testing.T) {
	cfg := testConfig(t, models.SQLite)
	cfg.RedisURL = fmt.Sprintf("redis://127.0.0.1:%d", freePort(t))
	var stderr syncBuffer
	err := run(context.Background(), cfg, Env{Stdout: io.Discard, Stderr: &stderr})
	if err == nil || !strings.Contains(err.Error(), "connect redis") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("run with Redis down: %v, want an error containing %q and %q", err, "connect redis", "connection refused")
	}
	logLines(t, stderr.String())
}

func TestRedisTimeouts(t *testing.T) {
	for _, tt := range []struct {
		url                       string
		dial, read, write, pool   time.Duration
		maxRetries, dialerRetries int
	}{
		{"redis://127.0.0.1:6390", 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, -1, 1},
		// What the URL says wins; 0 there means "no timeout" to go-redis.
		{"redis://127.0.0.1:6390?dial_timeout=300ms&read_timeout=0&max_retries=2", 300 * time.Millisecond, -1, 50 * time.Millisecond, 50 * time.Millisecond, 2, 1},
	} {
		opts, err := redis.ParseURL(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		setRedisTimeouts(opts, ratelimit.DefaultRedisTimeout)
		got := []any{opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout, opts.MaxRetries, opts.DialerRetries, opts.ContextTimeoutEnabled}
		want := []any{tt.dial, tt.read, tt.write, tt.pool, tt.maxRetries, tt.dialerRetries, true}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: dial, read, write, pool, retries, dial retries, context timeouts (-want +got):\n%s", tt.url, diff)
		}
	}
}

// TestRedisLogger calls the adapter directly: one JSON record at Warn.
func TestRedisLogger(t *testing.T) {
	var buf bytes.Buffer
	l := redisLogger{slog.New(slog.NewJSONHandler(&buf, nil))}
	l.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v\n", 1, "refused")
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON record: %q: %v", buf.String(), err)
	}
	want := map[string]any{"level": "WARN", "msg": "redis", "text": "redis: connection pool: failed to dial after 1 attempts: refused"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (record %s)", k, got[k], v, buf.String())
		}
	}
}
