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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// pprofOverlay is added to the service's main package, through go build
// -overlay, when a profile is asked for: the service has no pprof endpoint
// and its code is not the bench's to change.
const pprofOverlay = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("RECORDHUB_BENCH_PPROF_ADDR"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
`

// buildService builds ./cmd/recordhub into dir as name, with the pprof
// listener when withPprof is set, and with the build tags given.
func buildService(ctx context.Context, root, dir, name string, withPprof bool, tags ...string) (string, error) {
	bin := filepath.Join(dir, name)
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	if withPprof {
		src := filepath.Join(dir, "bench_pprof.go")
		if err := os.WriteFile(src, []byte(pprofOverlay), 0o600); err != nil {
			return "", err
		}
		overlay, err := json.Marshal(map[string]map[string]string{
			"Replace": {filepath.Join(root, "cmd", "recordhub", "zz_bench_pprof.go"): src},
		})
		if err != nil {
			return "", err
		}
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o600); err != nil {
			return "", err
		}
		args = append(args, "-overlay", ov)
	}
	args = append(args, "./cmd/recordhub")
	cmd := exec.CommandContext(ctx, goCommand(), args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/recordhub: %w\n%s", err, out)
	}
	return bin, nil
}

func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, goCommand(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run the bench inside the recordhub module")
	}
	return filepath.Dir(gomod), nil
}

// freePort returns a loopback address that was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// process is a child the bench started and must stop.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set when done is closed
	rss  *rssSampler
}

func (p *process) wait() {
	p.err = p.cmd.Wait()
	if p.rss != nil {
		p.rss.stop()
	}
	close(p.done)
}

// stop asks the process to finish (SIGTERM) and kills it if it has not
// after grace.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("pid %d did not stop within %s and was killed", p.cmd.Process.Pid, grace)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
		return nil
	}
	return p.err
}

// startPing starts the bare handler: this binary again, with "ping".
func startPing(ctx context.Context) (*process, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("find own binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "ping", "-addr", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start bare handler: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addr <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go p.wait()
	select {
	case a := <-addr:
		if a == "" {
			_ = p.stop(time.Second)
			return nil, "", errors.New("the bare handler printed no address")
		}
		return p, a, nil
	case <-time.After(10 * time.Second):
		_ = p.stop(time.Second)
		return nil, "", errors.New("the bare handler did not start within 10s")
	}
}

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
		env["RECORDHUB_BENCH_PPROF_ADDR"] = s.pprofAddr
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
	go func() {
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
	}()
	go s.wait()
	select {
	case s.addr = <-listening:
	case <-s.done:
		return nil, fmt.Errorf("recordhub serve exited before listening (%v); its log %s ends:\n%s", s.err, logPath, tailFile(logPath, 15))
	case <-time.After(90 * time.Second):
		_ = s.stop(5 * time.Second)
		return nil, fmt.Errorf("recordhub serve did not listen within 90s; its log %s ends:\n%s", logPath, tailFile(logPath, 15))
	case <-ctx.Done():
		_ = s.stop(5 * time.Second)
		return nil, ctx.Err()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := s.client.Get(s.url("/readyz"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			_ = s.stop(5 * time.Second)
			return nil, fmt.Errorf("recordhub is not ready after 30s (%v)", err)
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
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// metric reads one unlabelled sample from /metrics.
func (s *service) metric(ctx context.Context, name string) (float64, error) {
	m, err := s.scrape(ctx)
	if err != nil {
		return 0, err
	}
	v, ok := m[name]
	if !ok {
		return 0, fmt.Errorf("metric %s not found", name)
	}
	return v, nil
}

// drainAccessLogs waits until the access-log queue is empty, so that a
// scenario does not pay for the rows of the one before it.
func (s *service) drainAccessLogs(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		depth, err := s.metric(ctx, "recordhub_access_log_queue_depth")
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
		return errors.New("the service was built without pprof")
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

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), n)
}

// rssSampler polls a process's resident set size and keeps the peak of
// the current window.
type rssSampler struct {
	pid    int
	peak   atomic.Int64 // bytes, since the last window began
	max    atomic.Int64 // bytes, over the process's life
	quit   chan struct{}
	closed sync.Once
}

func newRSSSampler(pid int, every time.Duration) *rssSampler {
	r := &rssSampler{pid: pid, quit: make(chan struct{})}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v, err := readRSS(pid); err == nil {
				for p := r.peak.Load(); v > p && !r.peak.CompareAndSwap(p, v); p = r.peak.Load() {
				}
				for p := r.max.Load(); v > p && !r.max.CompareAndSwap(p, v); p = r.max.Load() {
				}
			}
			select {
			case <-r.quit:
				return
			case <-t.C:
			}
		}
	}()
	return r
}

// window returns the peak since the last call and starts a new window at
// the current size.
func (r *rssSampler) window() int64 {
	cur, _ := readRSS(r.pid)
	return r.peak.Swap(cur)
}

func (r *rssSampler) stop() { r.closed.Do(func() { close(r.quit) }) }

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// processCPU reads the user plus system CPU time a process has used from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis, from field 3 (state).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// commandCPU sums the CPU time of every process whose command name is
// comm, such as the local PostgreSQL server's backends. Processes that exit
// between two readings take their time with them, so it is a lower bound.
func commandCPU(comm string) time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		if d, err := processCPU(pid); err == nil {
			total += d
		}
	}
	return total
}

// readRSS reads VmRSS from /proc/PID/status, in bytes.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, errors.New("no VmRSS line")
}
