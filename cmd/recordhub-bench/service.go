package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// service is a running `recordhub serve`.
type service struct {
	*process
	addr      string
	pprofAddr string
	logPath   string
	client    *http.Client
}

// serviceEnv strips the caller's recordhub settings (a REDIS_URL would
// switch the limiter to Redis, a DATABASE_URL the database) and sets the
// bench's own.
func serviceEnv(set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "RECORDHUB_") || name == "DATABASE_URL" || name == "REDIS_URL" || name == "TEMPORAL_ADDRESS" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// startService starts `recordhub serve [args]` on a free loopback port and
// waits until it is ready. Its log goes to logPath; env receives the
// settings it was started with (its embedded Temporal port among them).
func startService(ctx context.Context, bin, logPath string, env map[string]string, withPprof bool, args ...string) (*service, error) {
	env["RECORDHUB_HTTP_ADDR"] = "127.0.0.1:0"
	// Should serve ever embed the Temporal dev stack, keep it off the
	// default ports and without its UI.
	// The webhook group asks for the UI by setting an address.
	if _, set := env["RECORDHUB_TEMPORAL_UI_ADDR"]; !set {
		env["RECORDHUB_TEMPORAL_UI_ADDR"] = ""
	}
	tport, err := freePort()
	if err != nil {
		return nil, err
	}
	_, p, _ := net.SplitHostPort(tport)
	env["RECORDHUB_TEMPORAL_PORT"] = p
	s := &service{logPath: logPath, client: &http.Client{Timeout: 30 * time.Second}}
	if withPprof {
		if s.pprofAddr, err = freePort(); err != nil {
			return nil, err
		}
		env["RECORDHUB_PPROF_ADDR"] = s.pprofAddr
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = serviceEnv(env)
	cmd.Stdout = logFile
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start recordhub serve: %w", err)
	}
	s.process = &process{cmd: cmd, done: make(chan struct{}), rss: newRSSSampler(cmd.Process.Pid, 50*time.Millisecond)}
	listening := make(chan string, 1)
	go copyLog(stderr, logFile, listening)
	go s.wait()
	if err := s.waitReady(ctx, listening); err != nil {
		return nil, err
	}
	return s, nil
}

// copyLog copies the service's JSON log to logFile and sends the address
// of its "recordhub listening" line to listening.
func copyLog(stderr io.Reader, logFile *os.File, listening chan<- string) {
	defer logFile.Close()
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		_, _ = logFile.Write(append(line, '\n'))
		var entry struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.Msg == "recordhub listening" {
			select {
			case listening <- entry.Addr:
			default:
			}
		}
	}
}

// waitReady waits for the service to listen and then to answer /readyz
// with 200; it stops the service when it does not.
func (s *service) waitReady(ctx context.Context, listening <-chan string) error {
	logPath := s.logPath
	select {
	case s.addr = <-listening:
	case <-s.done:
		return fmt.Errorf("recordhub serve exited before listening (%v); its log %s ends:\n%s", s.err, logPath, tailFile(logPath, 15))
	case <-time.After(90 * time.Second):
		_ = s.stop(5 * time.Second)
		return fmt.Errorf("recordhub serve did not listen within 90s; its log %s ends:\n%s", logPath, tailFile(logPath, 15))
	case <-ctx.Done():
		_ = s.stop(5 * time.Second)
		return ctx.Err()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := s.client.Get(s.url("/readyz"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			_ = s.stop(5 * time.Second)
			return fmt.Errorf("recordhub is not ready after 30s (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *service) url(path string) string { return "http://" + s.addr + path }

// call sends a JSON request with a bearer key and decodes a 2xx answer into
// out.
func (s *service) call(ctx context.Context, method, path, key string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url(path), body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b)), resp.StatusCode}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// statusError is a call answered with a status other than 2xx.
type statusError struct {
	msg  string
	code int
}

func (e *statusError) Error() string { return e.msg }

// drainAccessLogs waits until the access-log queue is empty, so that a
// scenario does not pay for the rows of the one before it.
func (s *service) drainAccessLogs(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		depth, err := s.metric(ctx, metricLogQueueLen)
		if err != nil {
			return err
		}
		if depth == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%v access-log rows still queued after %s", depth, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// saveProfile fetches a pprof profile of the service into path.
func (s *service) saveProfile(ctx context.Context, profile string, seconds int, path string) error {
	if s.pprofAddr == "" {
		return errors.New("the service runs without its profiler (RECORDHUB_PPROF_ADDR)")
	}
	url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", s.pprofAddr, profile, seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: time.Duration(seconds+30) * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s profile: %w", profile, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("fetch %s profile: %s: %s", profile, resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// stopService stops a service and says so when it would not stop cleanly.
func stopService(out io.Writer, name string, s *service) {
	if err := s.stop(40 * time.Second); err != nil {
		fmt.Fprintf(out, "%s: stopping: %v\n", name, err)
	}
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), n)
}
