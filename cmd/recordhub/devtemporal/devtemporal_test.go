package devtemporal

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const testNamespace = "recordhub-test"

// GreetWorkflow is the smallest workflow that runs an activity.
func GreetWorkflow(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var greeting string
	err := workflow.ExecuteActivity(ctx, Greet, name).Get(ctx, &greeting)
	return greeting, err
}

// Greet is GreetWorkflow's activity.
func Greet(_ context.Context, name string) (string, error) {
	return "hello, " + name, nil
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the embedded Temporal server; skipped by -short")
	}
	began := time.Now()
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("ready in %s: frontend %s, UI %q", time.Since(began).Round(time.Millisecond), s.Address(), s.UIURL())
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s
}

// dial connects to s; the client is closed when the test ends, or before
// with the returned func.
func dial(t *testing.T, s *Server) (client.Client, func()) {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.Address(),
		Namespace: testNamespace,
		Logger:    sdklog.NewStructuredLogger(testLogger()),
	})
	if err != nil {
		t.Fatalf("client.Dial(%s): %v", s.Address(), err)
	}
	closeClient := sync.OnceFunc(c.Close)
	t.Cleanup(closeClient)
	return c, closeClient
}

// runWorker polls taskQueue for GreetWorkflow and Greet until the test ends,
// or until the returned func stops it.
func runWorker(t *testing.T, c client.Client, taskQueue string) func() {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(GreetWorkflow)
	w.RegisterActivity(Greet)
	if err := w.Start(); err != nil {
		t.Fatalf("worker.Start: %v", err)
	}
	stop := sync.OnceFunc(w.Stop)
	t.Cleanup(stop)
	return stop
}

func greet(t *testing.T, c client.Client, id, taskQueue, name string) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, GreetWorkflow, name)
	if err != nil {
		t.Fatalf("ExecuteWorkflow(%s): %v", id, err)
	}
	return run
}

func wantResult(t *testing.T, run client.WorkflowRun, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatalf("workflow %s: %v", run.GetID(), err)
	}
	if got != want {
		t.Errorf("workflow %s returned %q, want %q", run.GetID(), got, want)
	}
}

func wantRetention(t *testing.T, c client.Client, want time.Duration) {
	t.Helper()
	desc, err := c.WorkflowService().DescribeNamespace(t.Context(), &workflowservice.DescribeNamespaceRequest{Namespace: testNamespace})
	if err != nil {
		t.Fatalf("DescribeNamespace: %v", err)
	}
	if got := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != want {
		t.Errorf("namespace retention = %s, want %s", got, want)
	}
}

// wantCompletedWithHistory checks that workflow id completed and its history
// is still stored.
func wantCompletedWithHistory(t *testing.T, c client.Client, id string) {
	t.Helper()
	desc, err := c.DescribeWorkflowExecution(t.Context(), id, "")
	if err != nil {
		t.Fatalf("DescribeWorkflowExecution(%s): %v", id, err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetStatus(); got != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Errorf("workflow %s status = %s, want COMPLETED", id, got)
	}
	events := 0
	for it := c.GetWorkflowHistory(t.Context(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT); it.HasNext(); {
		if _, err := it.Next(); err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		events++
	}
	if events < 5 { // started, task scheduled/started/completed, activity..., completed
		t.Errorf("history of %s has %d events, want the full run", id, events)
	}
}

// getUI fetches url, wants 200 OK and returns the body.
func getUI(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %s, want 200 OK", url, resp.Status)
	}
	return body
}

func TestWorkflowRunsAndHistorySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Namespace: testNamespace, Retention: 72 * time.Hour, Logger: testLogger()}

	s := startServer(t, cfg)
	c, closeClient := dial(t, s)
	stopWorker := runWorker(t, c, "greetings")
	wantResult(t, greet(t, c, "greet-1", "greetings", "recordhub"), "hello, recordhub")
	wantRetention(t, c, 72*time.Hour)

	stopWorker()
	closeClient()
	began := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(began).Round(time.Millisecond))
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	// Same directory, another retention: the history is still there and the
	// namespace takes the new retention.
	cfg.Retention = 96 * time.Hour
	s = startServer(t, cfg)
	c, _ = dial(t, s)
	wantCompletedWithHistory(t, c, "greet-1")
	wantRetention(t, c, 96*time.Hour)
}

func TestTakenPortsGiveClearErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	port := taken.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"ui", Config{DataDir: t.TempDir(), UIAddr: addr},
			fmt.Sprintf(`RECORDHUB_TEMPORAL_UI_ADDR %s is in use; set another address or "" to turn the UI off`, addr)},
		{"grpc", Config{DataDir: t.TempDir(), Port: port, UIAddr: "127.0.0.1:0"},
			fmt.Sprintf("RECORDHUB_TEMPORAL_PORT %d is in use; set another port", port)},
		{"retention", Config{DataDir: t.TempDir(), Retention: time.Minute},
			"RECORDHUB_TEMPORAL_RETENTION 1m0s is shorter than the server's minimum of 1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(t.Context(), tt.cfg)
			if err == nil {
				s.Stop()
				t.Fatal("Start succeeded, want an error")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Start error = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHistorySurvivesKill kills a child process running the server in the
// middle of its work, then starts on the same directory: the completed
// workflow's history is there, and a workflow the child started but nobody
// ran completes now.
func TestHistorySurvivesKill(t *testing.T) {
	if dir := os.Getenv("DEVTEMPORAL_CHILD_DIR"); dir != "" {
		runChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("needs the embedded Temporal server; skipped by -short")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHistorySurvivesKill$")
	cmd.Env = append(os.Environ(), "DEVTEMPORAL_CHILD_DIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "CHILD "); ok {
				ready <- line
				return
			}
		}
		close(ready)
	}()
	select {
	case line, ok := <-ready:
		if !ok || line != "ready" {
			t.Fatalf("child said %q, want ready", line)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("child did not get ready")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	s := startServer(t, Config{DataDir: dir, Namespace: testNamespace, Logger: testLogger()})
	c, _ := dial(t, s)
	wantCompletedWithHistory(t, c, "before-kill")
	runWorker(t, c, "after-kill")
	wantResult(t, c.GetWorkflow(t.Context(), "pending", ""), "hello, pending")
}

func runChild(t *testing.T, dir string) {
	s := startServer(t, Config{DataDir: dir, Namespace: testNamespace, Logger: testLogger()})
	c, _ := dial(t, s)
	runWorker(t, c, "before-kill")
	wantResult(t, greet(t, c, "before-kill", "before-kill", "recordhub"), "hello, recordhub")
	greet(t, c, "pending", "after-kill", "pending") // no worker polls it here
	fmt.Println("CHILD ready")
	select {} // until killed
}

// TestIdleFootprint reports the resident memory of a process running only
// the embedded server and UI. Run it alone:
//
//	DEVTEMPORAL_MEASURE=1 go test -run TestIdleFootprint -v ./cmd/recordhub/devtemporal/
func TestIdleFootprint(t *testing.T) {
	if os.Getenv("DEVTEMPORAL_MEASURE") == "" {
		t.Skip("set DEVTEMPORAL_MEASURE=1 to measure")
	}
	startServer(t, Config{DataDir: t.TempDir(), Namespace: testNamespace, UIAddr: "127.0.0.1:0", Logger: testLogger()})
	for _, wait := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		time.Sleep(wait)
		t.Logf("after %2.0fs more idle: VmRSS %d MB", wait.Seconds(), vmRSS(t)/1024)
	}
}

func vmRSS(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestInternalPortTaken: an internal service's port taken between picking
// and binding it (another process on a busy machine) once is retried with
// new ports and the server starts; taken every time, Start returns an
// error naming the listener, where the server's Fatal used to return and
// hand a nil listener to a goroutine that panicked out of reach, ending
// the whole process.
func TestInternalPortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the embedded Temporal server; skipped by -short")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	t.Cleanup(func() { internalPort = FreePort })

	t.Run("always", func(t *testing.T) {
		internalPort = func() (int, error) { return port, nil }
		s, err := Start(t.Context(), Config{DataDir: t.TempDir(), Namespace: testNamespace, Logger: testLogger()})
		if err == nil {
			s.Stop()
			t.Fatal("Start succeeded with every internal port taken, want an error")
		}
		if want := "start temporal server: Failed to start gRPC listener"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Start error = %q, want it to begin %q", err, want)
		}
	})
	t.Run("once", func(t *testing.T) {
		calls := 0
		internalPort = func() (int, error) {
			if calls++; calls == 1 {
				return port, nil
			}
			return FreePort()
		}
		s := startServer(t, Config{DataDir: t.TempDir(), Namespace: testNamespace, Logger: testLogger()})
		c, _ := dial(t, s)
		stop := runWorker(t, c, "greetings")
		defer stop()
		wantResult(t, greet(t, c, "greet-retry", "greetings", "recordhub"), "hello, recordhub")
	})
}
