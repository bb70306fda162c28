package devtemporal

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// WaitWorkflow runs until it is signalled "done": a workflow that the UI
// tests can query, and try to terminate, while it runs.
func WaitWorkflow(ctx workflow.Context) error {
	workflow.GetSignalChannel(ctx, "done").Receive(ctx, nil)
	return nil
}

// uiCall is one request to the Web UI.
type uiCall struct {
	method, path, host, body string
}

// do sends call to the UI at base (http://host:port), with a CSRF token as
// the UI's pages send it, and returns the status and body.
func (call uiCall) do(t *testing.T, base string) (int, string) {
	t.Helper()
	var body io.Reader
	if call.body != "" {
		body = strings.NewReader(call.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), call.method, base+call.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if call.host != "" {
		req.Host = call.host
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", "test-token")
	req.AddCookie(&http.Cookie{Name: "_csrf", Value: "test-token"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", call.method, call.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", call.method, call.path, err)
	}
	return resp.StatusCode, string(b)
}

// serveUI serves another Web UI for the frontend at frontend on a free
// loopback port until the test ends, and returns its base URL.
func serveUI(t *testing.T, frontend string, write bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	h, err := newUIHandler(frontend, testNamespace, "127.0.0.1", port, write)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

func wantStatus(t *testing.T, c client.Client, id string, want enumspb.WorkflowExecutionStatus) {
	t.Helper()
	desc, err := c.DescribeWorkflowExecution(t.Context(), id, "")
	if err != nil {
		t.Fatalf("DescribeWorkflowExecution(%s): %v", id, err)
	}
	if got := desc.GetWorkflowExecutionInfo().GetStatus(); got != want {
		t.Errorf("workflow %s status = %s, want %s", id, got, want)
	}
}

func wantNoWorkflow(t *testing.T, c client.Client, id string) {
	t.Helper()
	_, err := c.DescribeWorkflowExecution(t.Context(), id, "")
	if nf := new(serviceerror.NotFound); !errors.As(err, &nf) {
		t.Errorf("DescribeWorkflowExecution(%q) = %v, want not found", id, err)
	}
}

// TestWebUI runs one server with its UI: the UI serves its pages and API,
// refuses a Host that is not its address (DNS rebinding), and refuses writes
// by default, also through the ui-server's own exemption for queries; a UI
// with writes on changes workflows.
func TestWebUI(t *testing.T) {
	s := startServer(t, Config{DataDir: t.TempDir(), Namespace: testNamespace, UIAddr: "127.0.0.1:0", Logger: testLogger()})
	c, _ := dial(t, s)
	w := worker.New(c, "ui", worker.Options{})
	w.RegisterWorkflow(WaitWorkflow)
	if err := w.Start(); err != nil {
		t.Fatalf("worker.Start: %v", err)
	}
	t.Cleanup(w.Stop)
	run, err := c.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: "ui-target", TaskQueue: "ui"}, WaitWorkflow)
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	ui := s.UIURL()
	port := ui[strings.LastIndex(ui, ":")+1:]
	ns := "/api/v1/namespaces/" + testNamespace

	t.Run("pages and API", func(t *testing.T) {
		getUI(t, ui+"/")
		var settings struct {
			DefaultNamespace    string
			DisableWriteActions bool
		}
		if err := json.Unmarshal(getUI(t, ui+"/api/v1/settings"), &settings); err != nil {
			t.Fatalf("UI settings: %v", err)
		}
		if settings.DefaultNamespace != testNamespace {
			t.Errorf("UI default namespace = %q, want %q", settings.DefaultNamespace, testNamespace)
		}
		if !settings.DisableWriteActions {
			t.Error("UI settings: DisableWriteActions = false, want true (the UI hides its write buttons)")
		}
		var desc struct{ NamespaceInfo struct{ Name string } }
		if err := json.Unmarshal(getUI(t, ui+ns), &desc); err != nil {
			t.Fatalf("UI namespace API: %v", err)
		}
		if desc.NamespaceInfo.Name != testNamespace {
			t.Errorf("UI namespace API described %q, want %q", desc.NamespaceInfo.Name, testNamespace)
		}
	})

	t.Run("host", func(t *testing.T) {
		for _, tt := range []struct {
			call uiCall
			want int
		}{
			{uiCall{method: "GET", path: "/", host: "127.0.0.1:" + port}, http.StatusOK},
			{uiCall{method: "GET", path: "/", host: "localhost:" + port}, http.StatusOK},
			{uiCall{method: "GET", path: "/", host: "LocalHost:" + port}, http.StatusOK},
			{uiCall{method: "GET", path: ns, host: "[::1]:" + port}, http.StatusOK},
			{uiCall{method: "GET", path: "/", host: "rebind.attacker.example:" + port}, http.StatusMisdirectedRequest},
			{uiCall{method: "GET", path: "/", host: "rebind.attacker.example"}, http.StatusMisdirectedRequest},
			{uiCall{method: "GET", path: "/", host: "127.0.0.1:1"}, http.StatusMisdirectedRequest},
			{uiCall{method: "GET", path: "/", host: "localhost"}, http.StatusMisdirectedRequest},
			{uiCall{method: "GET", path: "/api/v1/settings", host: "rebind.attacker.example:" + port}, http.StatusMisdirectedRequest},
			{uiCall{method: "GET", path: ns, host: "rebind.attacker.example:" + port}, http.StatusMisdirectedRequest},
			{uiCall{method: "GET", path: ns + "/workflows", host: "rebind.attacker.example:" + port}, http.StatusMisdirectedRequest},
			{uiCall{method: "POST", path: ns + "/workflows/ui-target/query/__stack_trace", host: "rebind.attacker.example:" + port, body: `{}`}, http.StatusMisdirectedRequest},
		} {
			if got, body := tt.call.do(t, ui); got != tt.want {
				t.Errorf("%s %s with Host %q = %d %q, want %d", tt.call.method, tt.call.path, tt.call.host, got, body, tt.want)
			}
		}
	})

	t.Run("writes off", func(t *testing.T) {
		start := func(id string) uiCall {
			return uiCall{method: "POST", path: ns + "/workflows/" + id,
				body: `{"workflowType": {"name": "WaitWorkflow"}, "taskQueue": {"name": "ui"}}`}
		}
		for _, call := range []uiCall{
			{method: "POST", path: ns + "/workflows/ui-target/terminate", body: `{"reason": "from the UI"}`},
			{method: "POST", path: ns + "/workflows/ui-target/cancel", body: `{}`},
			{method: "POST", path: ns + "/workflows/ui-target/signal/done", body: `{}`},
			start("ui-started"),
			// The ui-server lets through a POST whose decoded path has
			// "/workflows/" and "/query/" in it; encoded slashes in an id
			// give it that.
			start("x%2Fquery%2Fy"),
			{method: "POST", path: ns + "/batch-operations/x%2Fworkflows%2Fy%2Fquery%2Fz",
				body: `{"visibilityQuery": "WorkflowId = 'ui-target'", "reason": "from the UI", "terminationOperation": {}}`},
			{method: "DELETE", path: ns + "/schedules/s"},
			{method: "PUT", path: ns + "/workflows/ui-target/terminate", body: `{}`},
		} {
			if got, body := call.do(t, ui); got != http.StatusForbidden {
				t.Errorf("%s %s = %d %q, want 403", call.method, call.path, got, body)
			}
		}
		wantStatus(t, c, "ui-target", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING)
		wantNoWorkflow(t, c, "ui-started")
		wantNoWorkflow(t, c, "x%2Fquery%2Fy")
		wantNoWorkflow(t, c, "x/query/y")

		// Queries are reads: the UI's stack trace tab works.
		query := uiCall{method: "POST", path: ns + "/workflows/ui-target/query/__stack_trace", body: `{}`}
		if got, body := query.do(t, ui); got != http.StatusOK {
			t.Errorf("query through the UI = %d %q, want 200", got, body)
		}
	})

	t.Run("writes on", func(t *testing.T) {
		writable := serveUI(t, s.Address(), true)
		var settings struct{ DisableWriteActions bool }
		if err := json.Unmarshal(getUI(t, writable+"/api/v1/settings"), &settings); err != nil {
			t.Fatalf("UI settings: %v", err)
		}
		if settings.DisableWriteActions {
			t.Error("UI settings with writes on: DisableWriteActions = true")
		}
		terminate := uiCall{method: "POST", path: ns + "/workflows/ui-target/terminate", body: `{"reason": "from the UI"}`}
		if got, body := terminate.do(t, writable); got != http.StatusOK {
			t.Fatalf("terminate through the UI with writes on = %d %q, want 200", got, body)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := run.Get(ctx, nil); err == nil {
			t.Error("ui-target ended without error, want terminated")
		}
		wantStatus(t, c, "ui-target", enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED)
	})
}

func TestHostGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, tt := range []struct {
		listen string // host of the listen address; the port is 8233
		hosts  map[string]bool
	}{
		{"127.0.0.1", map[string]bool{
			"127.0.0.1:8233": true, "localhost:8233": true, "[::1]:8233": true, "127.0.0.2:8233": true,
			"LOCALHOST:8233": true,
			"127.0.0.1:8234": false, "127.0.0.1": false, "": false, ":8233": false,
			"evil.example:8233": false, "localhost.evil.example:8233": false, "localhost.:8233": false,
			"192.168.1.10:8233": false, "0.0.0.0:8233": false,
		}},
		{"::1", map[string]bool{"[::1]:8233": true, "localhost:8233": true, "127.0.0.1:8233": true, "evil.example:8233": false}},
		{"localhost", map[string]bool{"localhost:8233": true, "127.0.0.1:8233": true, "evil.example:8233": false}},
		{"192.0.2.7", map[string]bool{
			"192.0.2.7:8233": true,
			"localhost:8233": false, "127.0.0.1:8233": false, "evil.example:8233": false,
		}},
		{"devbox.lan", map[string]bool{
			"devbox.lan:8233": true, "DevBox.lan:8233": true,
			"localhost:8233": false, "127.0.0.1:8233": false, "evil.example:8233": false,
		}},
		{"0.0.0.0", map[string]bool{
			"0.0.0.0:8233": true, "127.0.0.1:8233": true, "localhost:8233": true, "[::1]:8233": true,
			"evil.example:8233": false, "203.0.113.9:8233": false, "127.0.0.1:80": false,
		}},
		{"", map[string]bool{"127.0.0.1:8233": true, "localhost:8233": true, ":8233": false, "evil.example:8233": false}},
	} {
		g := newHostGuard(tt.listen, 8233, ok)
		for host, want := range tt.hosts {
			req := httptest.NewRequest("GET", "/api/v1/settings", nil)
			req.Host = host
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, req)
			if got := rec.Code == http.StatusOK; got != want {
				t.Errorf("listening on %q: Host %q answered %d, want allowed=%v", tt.listen, host, rec.Code, want)
			}
		}
	}

	// On every address, the machine's own addresses are its names too.
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	g := newHostGuard("::", 8233, ok)
	for _, a := range addrs {
		if n, isIP := a.(*net.IPNet); isIP && n.IP.To4() != nil {
			host := net.JoinHostPort(n.IP.String(), "8233")
			if !g.allowed(host) {
				t.Errorf("listening on [::]: Host %q (an interface's address) refused", host)
			}
		}
	}
	if g := newHostGuard("127.0.0.1", 80, ok); !g.allowed("localhost") || !g.allowed("127.0.0.1") {
		t.Error("listening on port 80: a Host without a port refused")
	}
}

func TestReadOnly(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := readOnly(next)
	const ns = "/api/v1/namespaces/default"
	for _, tt := range []struct {
		method, path string
		header       string
		want         int
	}{
		{"GET", "/", "", 200},
		{"GET", ns + "/workflows", "", 200},
		{"HEAD", "/", "", 200},
		{"OPTIONS", ns + "/workflows/w/terminate", "", 200},
		{"POST", ns + "/workflows/w/query/__stack_trace", "", 200},
		{"POST", ns + "/workflows/a%20b/query/q%2Fx", "", 200},
		{"POST", ns + "/workflows/w/query/__stack_trace", "DELETE", 403},
		{"GET", ns + "/workflows", "POST", 403},
		{"POST", ns + "/workflows/w/query/", "", 403},
		{"POST", ns + "/workflows//query/q", "", 403},
		{"POST", ns + "/workflows/w/query/q/terminate", "", 403},
		{"POST", ns + "/workflows/x%2Fquery%2Fy", "", 403},
		{"POST", ns + "/batch-operations/x%2Fworkflows%2Fy%2Fquery%2Fz", "", 403},
		{"POST", "/api/v1/namespaces/x%2Fworkflows%2Fy/query/z", "", 403},
		{"POST", ns + "/workflows/w/terminate", "", 403},
		{"POST", ns + "/workflows/w", "", 403},
		{"PUT", ns + "/workflows/w/query/q", "", 403},
		{"PATCH", ns + "/schedules/s", "", 403},
		{"DELETE", ns + "/schedules/s", "", 403},
		{"POST", "/namespaces/default/workflows/w/query/q", "", 403},
	} {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		if tt.header != "" {
			req.Header.Set("X-HTTP-Method-Override", tt.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s %s (override %q) = %d, want %d", tt.method, tt.path, tt.header, rec.Code, tt.want)
		}
	}
}

func TestUIRoutes(t *testing.T) {
	// The reflective read of the ui-server's handler must find it; Start
	// depends on it.
	h, err := newUIHandler("127.0.0.1:1", testNamespace, "127.0.0.1", 8233, false)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Host = "127.0.0.1:8233"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", rec.Code)
	}
}
