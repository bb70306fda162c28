package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/cmd/internal/harness"
)

// service is a running `recordhub serve`.
type service struct {
	*process
	addr      string
	pprofAddr string
	logPath   string
	client    *http.Client
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
	tport, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	_, p, _ := net.SplitHostPort(tport)
	env["RECORDHUB_TEMPORAL_PORT"] = p
	s := &service{logPath: logPath, client: &http.Client{Timeout: 30 * time.Second}}
	if withPprof {
		if s.pprofAddr, err = harness.FreeAddr(); err != nil {
			return nil, err
		}
		env["RECORDHUB_PPROF_ADDR"] = s.pprofAddr
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = harness.ServiceEnv(env)
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
	if err := harness.WaitOK(ctx, s.client, s.url("/readyz"), 30*time.Second, nil); err != nil {
		_ = s.stop(5 * time.Second)
		return fmt.Errorf("recordhub is not ready after 30s (%w)", err)
	}
	return nil
}

func (s *service) url(path string) string { return "http://" + s.addr + path }

// as is a client of the service's API with key, through the service's
// HTTP client.
func (s *service) as(key string) *client.Client {
	return client.New(s.url(""), key, client.WithHTTPClient(s.client))
}

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
	return saveProfile(ctx, s.pprofAddr, profile, seconds, path)
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// saveProfile fetches a pprof profile from the profiler at addr into path.
func saveProfile(ctx context.Context, addr, profile string, seconds int, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, profile, seconds)
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
