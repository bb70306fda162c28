package main

// The package's test helpers: what more than one of its test files uses.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/recordhub/recordhub/cmd/recordhub/devtemporal"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
	"go.temporal.io/sdk/client"
)

func keys(m map[string][]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// readReadme returns the repository's top README.
func readReadme(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// walkthroughBlocks returns the body of every ```sh block that follows a
// walkthroughMarker line, in order. A marker not followed by a ```sh fence,
// or a block left open, is an error: the test must run what the reader sees.
func walkthroughBlocks(t *testing.T, readme []byte) []string {
	t.Helper()
	var blocks []string
	sc := bufio.NewScanner(bytes.NewReader(readme))
	line := 0
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) != walkthroughMarker {
			continue
		}
		if !sc.Scan() || strings.TrimSpace(sc.Text()) != "```sh" {
			t.Fatalf("README.md:%d: %s is not followed by a ```sh fence", line, walkthroughMarker)
		}
		line++
		start := line
		var b strings.Builder
		closed := false
		for sc.Scan() {
			line++
			if strings.TrimSpace(sc.Text()) == "```" {
				closed = true
				break
			}
			b.WriteString(sc.Text())
			b.WriteByte('\n')
		}
		if !closed {
			t.Fatalf("README.md:%d: the walkthrough block is not closed", start)
		}
		blocks = append(blocks, b.String())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// moduleRoot is the directory holding go.mod, found from the test's
// working directory upwards.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// testConfig returns the configuration of a service on port 0 with a fresh
// data dir, on SQLite or on a fresh PostgreSQL schema.
func testConfig(t *testing.T, d models.Dialect) Config {
	t.Helper()
	env := map[string]string{
		"RECORDHUB_HTTP_ADDR":        "127.0.0.1:0",
		"RECORDHUB_DATA_DIR":         t.TempDir(),
		"RECORDHUB_TEMPORAL_PORT":    fmt.Sprint(temporalPort(t)),
		"RECORDHUB_TEMPORAL_UI_ADDR": "",
	}
	if d == models.Postgres {
		env["DATABASE_URL"] = storetest.PostgresURL(t)
	}
	cfg, err := configFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// syncBuffer is a bytes.Buffer safe for the service's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startService runs the service until the returned stop is called; stop
// returns run's error. Its log is discarded, or appended, at debug level,
// to the file RECORDHUB_TEST_SERVICE_LOG names (for a failure's
// post-mortem).
func startService(t *testing.T, cfg Config, stdout io.Writer) (base string, stop func() error) {
	t.Helper()
	var stderr io.Writer = io.Discard
	if path := os.Getenv("RECORDHUB_TEST_SERVICE_LOG"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		stderr, cfg.LogLevel = f, slog.LevelDebug
	}
	return startServiceLogging(t, cfg, stdout, stderr)
}

// startServiceLogging is startService with the service's stderr (its JSON
// log) written to stderr.
func startServiceLogging(t *testing.T, cfg Config, stdout, stderr io.Writer) (base string, stop func() error) {
	t.Helper()
	return startServiceEnv(t, cfg, Env{Stdout: stdout, Stderr: stderr})
}

// startServiceEnv is startService with env (its Listening is replaced).
func startServiceEnv(t *testing.T, cfg Config, env Env) (base string, stop func() error) {
	t.Helper()
	skipShort(t)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	env.Listening = func(a string) { addr <- a }
	go func() {
		done <- run(ctx, cfg, env)
	}()
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		// No timer beside these two: a start slowed by a busy machine
		// must not fail, and one that hangs ends in the test binary's
		// -timeout with every goroutine's stack, which shows where.
		cancel()
		t.Fatalf("service did not start: %v", err)
	}
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() { stop() })
	return base, stop
}

// skipShort skips a test that runs the service: it starts the embedded
// Temporal server.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the embedded Temporal server; skipped by -short")
	}
}

// concurrently calls f n times from workers goroutines and returns when
// every call has returned.
func concurrently(n, workers int, f func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				f()
			}
		})
	}
	wg.Wait()
}

func call(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	var m map[string]any
	json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

func mustTenant(t *testing.T, s *models.Store, key string) string {
	t.Helper()
	k, err := s.Authenticate(context.Background(), key)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return k.TenantID
}

// databaseOf is the database cfg names, for a test to read or write it
// beside the store.
func databaseOf(cfg Config) *storetest.DB {
	if cfg.DatabaseURL != "" {
		return &storetest.DB{Dialect: models.Postgres, DSN: cfg.DatabaseURL}
	}
	return &storetest.DB{Dialect: models.SQLite, DSN: sqlitePath(cfg)}
}

// storedAIKey returns the AI provider key that the database of cfg holds
// for tenant id, opened with cfg's secret key; "" when none is set.
func storedAIKey(t *testing.T, cfg Config, id string) string {
	t.Helper()
	key, err := secretKey(cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	box, err := models.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	return databaseOf(cfg).TenantAIKey(t, box, id)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// temporalPort is a free port for the embedded Temporal server, which
// binds it only once the service starts: drawn as the server draws its
// own (devtemporal.FreePort), where no port-0 listener of another test
// can take it meanwhile.
func temporalPort(t *testing.T) int {
	t.Helper()
	port, err := devtemporal.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// webhookConfig is a role-all service with the embedded Temporal server on
// free ports, fast retries, and loopback receivers allowed.
func webhookConfig(t *testing.T, d models.Dialect) Config {
	t.Helper()
	cfg := testConfig(t, d)
	cfg.BootstrapAdminKey = "rh_e2e_" + strings.Repeat("a", 30)
	cfg.WebhookRetryInitial = 200 * time.Millisecond
	cfg.WebhookRetryMaxInterval = time.Second
	cfg.WebhookTimeout = 5 * time.Second
	cfg.WebhookAllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	return cfg
}

func jsonCall(t *testing.T, method, url, key string, body any) map[string]any {
	t.Helper()
	var s string
	if body != nil {
		b, _ := json.Marshal(body)
		s = string(b)
	}
	st, m := call(t, method, url, key, s)
	if st >= 300 {
		t.Fatalf("%s %s: %d %v", method, url, st, m)
	}
	return m
}

// fastRecovery makes the command poll and back off in milliseconds.
func fastRecovery(t *testing.T) {
	t.Helper()
	saved := recoverTiming
	recoverTiming.poll, recoverTiming.backoff, recoverTiming.maxRetryAfter = time.Millisecond, time.Millisecond, 5*time.Millisecond
	t.Cleanup(func() { recoverTiming = saved })
}

// runWithEnv runs a command line; a command that waits for ever is cut
// short, so a hang fails the test rather than stalling it.
func runWithEnv(ctx context.Context, env map[string]string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	err = runCommand(ctx, args, lookup, nil, &out, &errOut)
	return out.String(), errOut.String(), err
}

func lines(s string) []string {
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}

// logLines returns the lines of a JSON log, failing the test on any line
// that is not JSON.
func logLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for i, l := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		if l == "" {
			continue
		}
		if !json.Valid([]byte(l)) {
			t.Errorf("stderr line %d is not JSON: %q", i+1, l)
			continue
		}
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		lines = append(lines, m)
	}
	return lines
}

// holdingReceiver is a receiver for tests that kill the worker while a
// request waits: it answers 204, except to a request that hold (given the
// request and its whole body) says to hold, which it answers only once the
// worker that sent it is gone (the connection closed) or the test ends. held
// receives once for each request held.
func holdingReceiver(t *testing.T, hold func(r *http.Request, body []byte) bool) (url string, held <-chan struct{}) {
	t.Helper()
	h, release := make(chan struct{}, 1), make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read to the end, so that the server notices the connection close.
		body, _ := io.ReadAll(r.Body)
		if !hold(r, body) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(recv.Close)
	t.Cleanup(func() { close(release) })
	return recv.URL, h
}

// deliveries is a receiver that answers 204, counts each event's
// requests and notes when each record's first delivery arrived, and
// what it was.
type deliveries struct {
	srv   *httptest.Server
	mu    sync.Mutex
	by    map[string]int       // X-Webhook-Id → requests
	first map[string]time.Time // record id → first arrival
	what  map[string]searchRef // record id → its first delivery
}

func newDeliveries(t *testing.T) *deliveries {
	d := &deliveries{by: map[string]int{}, first: map[string]time.Time{}, what: map[string]searchRef{}}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		var ev struct {
			ID       string `json:"id"`
			Event    string `json:"event"`
			TenantID string `json:"tenant_id"`
			Record   struct {
				ID       string `json:"id"`
				ModuleID string `json:"module_id"`
			} `json:"record"`
		}
		raw, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(raw, &ev)
		d.mu.Lock()
		d.by[req.Header.Get("X-Webhook-Id")]++
		if _, ok := d.first[ev.Record.ID]; !ok {
			d.first[ev.Record.ID] = now
			d.what[ev.Record.ID] = searchRef{tenant: ev.TenantID, module: ev.Record.ModuleID, record: ev.Record.ID, eventType: ev.Event, eventID: ev.ID}
		}
		d.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

// events is how many events arrived.
func (d *deliveries) events() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.by)
}

// delivered is what the first delivery about a record was, its endpoint
// left out.
func (d *deliveries) delivered(recordID string) (searchRef, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.what[recordID]
	return r, ok
}

// at is when the first delivery about a record arrived.
func (d *deliveries) at(recordID string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.first[recordID]
	return t, ok
}

// doubled returns the events that arrived more than once, and how often.
func (d *deliveries) doubled() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for id, n := range d.by {
		if n != 1 {
			out[id] = n
		}
	}
	return out
}

// checkPurgeSchedule checks, on a running role-all service with the
// embedded server, that the worker created the hourly purge schedule
// starting the Purge workflow on its task queue, and that a run it starts
// (triggered now rather than in an hour) completes.
func checkPurgeSchedule(t *testing.T, cfg Config) {
	t.Helper()
	ctx := t.Context()
	c, err := client.Dial(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", cfg.TemporalPort), Namespace: cfg.TemporalNamespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := workflows.PurgeScheduleIDFor(cfg.TemporalTaskQueue)
	h := c.ScheduleClient().GetHandle(ctx, id)
	desc, err := h.Describe(ctx)
	if err != nil {
		t.Fatalf("describe schedule %s: %v", id, err)
	}
	if iv := desc.Schedule.Spec.Intervals; len(iv) != 1 || iv[0].Every != time.Hour {
		t.Errorf("schedule intervals %+v, want every hour", iv)
	}
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || action.Workflow != workflows.PurgeWorkflowName || action.TaskQueue != cfg.TemporalTaskQueue {
		t.Fatalf("schedule action %+v, want the %s workflow on %s", desc.Schedule.Action, workflows.PurgeWorkflowName, cfg.TemporalTaskQueue)
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	var started *client.ScheduleWorkflowExecution
	storetest.Eventually(t, 30*time.Second, "the triggered purge to start", func() bool {
		d, err := h.Describe(ctx)
		if err != nil || len(d.Info.RecentActions) == 0 {
			return false
		}
		started = d.Info.RecentActions[0].StartWorkflowResult
		return started != nil
	})
	var out workflows.PurgeWorkflowOutput
	if err := c.GetWorkflow(ctx, started.WorkflowID, started.FirstExecutionRunID).Get(ctx, &out); err != nil {
		t.Fatalf("purge run %s: %v", started.WorkflowID, err)
	}
	var kinds []models.PurgeKind
	for _, k := range out.Kinds {
		kinds = append(kinds, k.Kind)
	}
	if !slices.Equal(kinds, models.PurgeKinds) {
		t.Errorf("purge result %+v: want one entry per kind of %v, in order", out, models.PurgeKinds)
	}
}

type delivered struct {
	eventID, tenantID, traceparent string
}

// receiver is a webhook receiver that verifies signatures like a careful
// receiver would, and fails the first failFirst attempts of each event.
// With check set, it also checks each body as it arrives (see
// schemaCheck).
type receiver struct {
	t         *testing.T
	srv       *httptest.Server
	mu        sync.Mutex
	secret    string
	failFirst int
	check     func(raw []byte) error
	got       []received
	attempts  map[string]int
}

type received struct {
	id, event, attempt string
	raw                []byte
	body               map[string]any
	verified           bool
	// checked is what check answered, nil without one.
	checked error
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{t: t, failFirst: failFirst, attempts: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	check := r.check
	r.mu.Unlock()
	var checked error
	if check != nil {
		checked = check(raw)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	mac := hmac.New(sha256.New, []byte(r.secret))
	mac.Write(raw)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	var body map[string]any
	json.Unmarshal(raw, &body)
	id := req.Header.Get("X-Webhook-Id")
	r.got = append(r.got, received{id: id, event: req.Header.Get("X-Webhook-Event"), attempt: req.Header.Get("X-Webhook-Attempt"),
		raw: raw, body: body, verified: hmac.Equal([]byte(want), []byte(req.Header.Get("X-Webhook-Signature"))), checked: checked})
	r.attempts[id]++
	if r.attempts[id] <= r.failFirst {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// child is the service running in a child process.
type child struct {
	cmd  *exec.Cmd
	base string
}

// startChild runs the service as a child process (this test binary, see
// TestMain) with cfg and the variables env ("NAME=value") on top, and
// waits until it listens.
func startChild(t *testing.T, cfg Config, env ...string) *child {
	skipShort(t)
	t.Helper()
	addrFile := t.TempDir() + "/addr"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"RECORDHUB_E2E_CHILD=1", "RECORDHUB_E2E_ADDR_FILE="+addrFile,
		"RECORDHUB_HTTP_ADDR=127.0.0.1:0", "RECORDHUB_DATA_DIR="+cfg.DataDir, "DATABASE_URL="+cfg.DatabaseURL,
		"RECORDHUB_BOOTSTRAP_ADMIN_KEY="+cfg.BootstrapAdminKey, fmt.Sprintf("RECORDHUB_TEMPORAL_PORT=%d", cfg.TemporalPort),
		"RECORDHUB_TEMPORAL_UI_ADDR=", "RECORDHUB_WEBHOOK_RETRY_INITIAL="+cfg.WebhookRetryInitial.String(),
		"RECORDHUB_WEBHOOK_RETRY_MAX_INTERVAL="+cfg.WebhookRetryMaxInterval.String(),
		"RECORDHUB_WEBHOOK_ALLOW_CIDRS="+strings.ReplaceAll(strings.Trim(fmt.Sprint(cfg.WebhookAllowCIDRs), "[]"), " ", ","),
	)
	cmd.Env = append(cmd.Env, env...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd}
	t.Cleanup(func() { c.kill(t) })
	storetest.Eventually(t, 60*time.Second, "the child to listen", func() bool {
		b, err := os.ReadFile(addrFile)
		if err != nil || len(b) == 0 {
			return false
		}
		c.base = "http://" + strings.TrimSpace(string(b))
		return true
	})
	return c
}

func (c *child) kill(t *testing.T) {
	if c.cmd.ProcessState != nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()
}

// schemaCheck is a receiver's check (receiver.check) of bodies against the
// API's event schemas: each body against the document of its module,
// fetched when the body arrives; an endpoint_disabled body, which belongs
// to no module, against the first module's (every document has it).
func schemaCheck(base, key string) func(raw []byte) error {
	return func(raw []byte) error {
		var head struct {
			Module struct {
				ID string `json:"id"`
			} `json:"module"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return fmt.Errorf("the body is not JSON: %w", err)
		}
		id := head.Module.ID
		if id == "" {
			var mods struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if err := getJSON(base+"/api/admin/modules", key, &mods); err != nil || len(mods.Data) == 0 {
				return fmt.Errorf("a module whose document to check a body of no module against: %v", err)
			}
			id = mods.Data[0].ID
		}
		return validateBody(base+"/api/admin/modules/"+id+"/event-schemas", key, raw)
	}
}

// validateBody fetches the module's document from the API, as a receiver
// would when the body arrives, and validates the body against it with
// santhosh-tekuri/jsonschema, formats asserted.
func validateBody(schemaURL, key string, body []byte) error {
	var doc any
	if err := getJSON(schemaURL, key, &doc); err != nil {
		return fmt.Errorf("fetch the schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return fmt.Errorf("compile the schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	return sch.Validate(inst)
}

// getJSON GETs url with key as bearer and decodes a 200's body into v
// (numbers as json.Number), without a test to fail: receivers call it.
func getJSON(url, key string, v any) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, res.StatusCode, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// mustJSON encodes v, for a request body or to search an answer.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
