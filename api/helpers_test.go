package api_test

// The package's test helpers: what more than one of its test files uses.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/accesslog"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// env is one running API on a fresh database, with a tenant and its admin
// key. Every response it receives is checked against api/openapi.yaml.
type env struct {
	t        *testing.T
	store    *models.Store
	srv      *httptest.Server
	logs     *accesslog.Writer
	tenantID string
	admin    string
	server   *api.Server
}

type envOption func(*api.Deps)

// withLimiter replaces the in-process limiter.
func withLimiter(l api.Limiter) envOption { return func(d *api.Deps) { d.Limiter = l } }

// withCheckURL replaces the subscription-time URL check (nil: none, so
// every webhook URL is refused).
func withCheckURL(f func(ctx context.Context, rawURL string) error) envOption {
	return func(d *api.Deps) { d.CheckURL = f }
}

// withReplayer gives the server a replayer; without one, replay answers 503.
func withReplayer(r api.Replayer) envOption { return func(d *api.Deps) { d.Replayer = r } }

// blockedHost is the one host the tests' default URL check refuses.
const blockedHost = "blocked.invalid"

// checkURLOffline stands in for the egress guard, which resolves names:
// tests must not need the network, so it refuses only blockedHost.
func checkURLOffline(_ context.Context, rawURL string) error {
	if u, err := url.Parse(rawURL); err == nil && u.Hostname() == blockedHost {
		return models.Errorf(models.KindInvalidURL, "%s is on a blocked network", u.Hostname())
	}
	return nil
}

// forEachDB runs f as a subtest on SQLite and on PostgreSQL.
func forEachDB(t *testing.T, f func(t *testing.T, d models.Dialect)) {
	t.Helper()
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f(t, d)
		})
	}
}

func newEnv(t *testing.T, d models.Dialect, opts ...envOption) *env {
	t.Helper()
	return newEnvOn(t, storetest.Open(t, d), opts...)
}

// newEnvOn starts an API on an existing store for a tenant of its own:
// "test" on a store without tenants, "test 2" after it, and so on (a
// store refuses a second tenant of a name).
func newEnvOn(t *testing.T, store *models.Store, opts ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, store: store}
	ts, err := store.ListTenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := "test"
	if len(ts) > 0 {
		name = fmt.Sprint("test ", len(ts)+1)
	}
	tenant, _, secret, err := store.CreateTenant(ctx, name, 100000)
	if err != nil {
		t.Fatal(err)
	}
	e.tenantID, e.admin = tenant.ID, secret
	e.logs = accesslog.New(store, accesslog.Options{Interval: 20 * time.Millisecond})
	go e.logs.Run(ctx)
	deps := api.Deps{
		Store: store, Limiter: ratelimit.NewMemory(nil), Logs: e.logs, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), DefaultRateLimit: 600,
		Ready:    []api.Check{{Name: "database", Check: store.Ping}},
		CheckURL: checkURLOffline,
	}
	for _, o := range opts {
		o(&deps)
	}
	srv := api.New(deps)
	e.server = srv
	e.srv = httptest.NewServer(validateAgainstOpenAPI(t, srv.Handler()))
	t.Cleanup(func() {
		// Streams end first: Close waits for every request.
		srv.EndStreams()
		e.srv.Close()
		e.logs.Close(context.Background())
	})
	return e
}

// on returns the env bound to a subtest, so that its failures stop that
// subtest and not its parent.
func (e *env) on(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// resp is a received response.
type resp struct {
	t      *testing.T
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic value.
func (r *resp) json() map[string]any {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		r.t.Fatalf("decode %s: %v", r.body, err)
	}
	return m
}

// decode decodes the body into v.
func (r *resp) decode(v any) {
	r.t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		r.t.Fatalf("decode %s: %v", r.body, err)
	}
}

// want fails the test unless the status is status.
func (r *resp) want(status int) *resp {
	r.t.Helper()
	if r.status != status {
		r.t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	return r
}

// errorCode returns the error code of an error body.
func (r *resp) errorCode() string {
	r.t.Helper()
	s, _ := r.json()["error"].(string)
	return s
}

// call sends a request with the key as bearer (none when empty). body is
// sent as JSON unless it is a string or []byte, which are sent as they are.
func (e *env) call(method, path, key string, body any, headers ...string) *resp {
	e.t.Helper()
	var rd io.Reader
	contentType := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, contentType = strings.NewReader(b), "application/json"
	case []byte:
		rd, contentType = bytes.NewReader(b), "application/json"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd, contentType = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return &resp{t: e.t, status: res.StatusCode, header: res.Header, body: b}
}

// createModule creates a module through the admin API and returns its id.
func (e *env) createModule(slug string, fields ...map[string]any) string {
	e.t.Helper()
	if fields == nil {
		fields = []map[string]any{}
	}
	r := e.call("POST", "/api/admin/modules", e.admin, map[string]any{"slug": slug, "name": strings.ToUpper(slug), "fields": fields}).want(201)
	return r.json()["id"].(string)
}

// createKey creates a key with the given permissions and returns its id and secret.
func (e *env) createKey(body map[string]any) (id, secret string) {
	e.t.Helper()
	r := e.call("POST", "/api/admin/keys", e.admin, body).want(201)
	m := r.json()
	return m["id"].(string), m["key"].(string)
}

// createRecord creates a record and returns its id.
func (e *env) createRecord(moduleID string, fields map[string]any) string {
	e.t.Helper()
	r := e.call("POST", "/api/modules/"+moduleID+"/records", e.admin, map[string]any{"fields": fields}).want(201)
	return r.json()["id"].(string)
}

// flushLogs waits until the access-log rows of the calls made so far are
// written.
func (e *env) flushLogs() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.logs.Flush(ctx); err != nil {
		e.t.Fatalf("flush the access log: %v", err)
	}
}

// replicaOf starts a second API on store serving e's tenant, as another
// replica of the service would. (newEnvOn makes a tenant of its own on the
// store; it is left unused.)
func replicaOf(t *testing.T, e *env, store *models.Store, opts ...envOption) *env {
	t.Helper()
	r := newEnvOn(t, store, opts...)
	r.tenantID, r.admin = e.tenantID, e.admin
	return r
}

// wantUnauthorized checks a 401 answer: its code, the WWW-Authenticate
// challenge and the error body.
func wantUnauthorized(t *testing.T, r *resp, code string) {
	t.Helper()
	if r.status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401; body %s", r.status, r.body)
	}
	if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("WWW-Authenticate %q, want a Bearer challenge", got)
	}
	wantErrorBody(t, r, code)
}

// wantErrorBody checks the error envelope (error, message, request_id) and the code.
func wantErrorBody(t *testing.T, r *resp, code string) map[string]any {
	t.Helper()
	m := r.json()
	if got := m["error"]; got != code {
		t.Errorf("error %v, want %q; body %s", got, code, r.body)
	}
	if msg, _ := m["message"].(string); msg == "" {
		t.Errorf("no message in %s", r.body)
	}
	if id, _ := m["request_id"].(string); id == "" || id != r.header.Get("X-Request-Id") {
		t.Errorf("request_id %q, X-Request-Id %q: want the same, non-empty", id, r.header.Get("X-Request-Id"))
	}
	return m
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// fakeStarter records the workflows it is asked to start.
type fakeStarter struct {
	mu      sync.Mutex
	err     error
	started []client.StartWorkflowOptions
	inputs  []workflows.RecoveryInput
}

func (f *fakeStarter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	f.started = append(f.started, o)
	f.inputs = append(f.inputs, args[0].(workflows.RecoveryInput))
	return nil, nil
}

func (f *fakeStarter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started)
}

func withRecoverer(r api.Recoverer) envOption { return func(d *api.Deps) { d.Recoverer = r } }

// recoverer adapts workflows.Recoveries to api.Recoverer.
type recoverer struct{ *workflows.Recoveries }

func (r recoverer) StartRecovery(ctx context.Context, tenantID, endpointID string, since time.Time, until *time.Time) (*models.WebhookRecovery, error) {
	return r.Start(ctx, tenantID, endpointID, since, until)
}

func (r recoverer) CheckRecovery(ctx context.Context, rec *models.WebhookRecovery) (*models.WebhookRecovery, error) {
	return r.Check(ctx, rec)
}

// fakeDescriber answers DescribeWorkflowExecution with a status or an
// error, and counts the calls.
type fakeDescriber struct {
	mu     sync.Mutex
	status enumspb.WorkflowExecutionStatus
	err    error
	calls  int
}

func (f *fakeDescriber) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: f.status}}, nil
}

func (f *fakeDescriber) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeDescriber) set(status enumspb.WorkflowExecutionStatus, err error) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.err = status, err
	return f.calls
}

// resyncer adapts workflows.Resyncs to api.Resyncer.
type resyncer struct{ *workflows.Resyncs }

func (r resyncer) StartResync(ctx context.Context, tenantID, endpointID string) (*models.WebhookResync, error) {
	return r.Start(ctx, tenantID, endpointID)
}

func (r resyncer) CheckResync(ctx context.Context, rs *models.WebhookResync) (*models.WebhookResync, error) {
	return r.Check(ctx, rs)
}

func withResyncer(r api.Resyncer) envOption { return func(d *api.Deps) { d.Resyncer = r } }

type statsPage struct {
	Data []struct {
		ID    string         `json:"id"`
		Stats *statsResponse `json:"stats"`
	} `json:"data"`
}

// wantDetails checks a 422 validation_failed answer and the fields its
// details name.
func wantDetails(t *testing.T, r *resp, fields ...string) {
	t.Helper()
	r.want(http.StatusUnprocessableEntity)
	var body struct {
		Error   string              `json:"error"`
		Details []models.FieldError `json:"details"`
	}
	r.decode(&body)
	var got []string
	for _, d := range body.Details {
		got = append(got, d.Field)
	}
	if body.Error != "validation_failed" || !slices.Equal(slices.Compact(got), fields) {
		t.Errorf("got %s %v, want validation_failed on %v; body %s", body.Error, got, fields, r.body)
	}
}

// deliveryRows stores four attempts: two endpoints × two event types, a
// success and a failure on each endpoint, one second apart (d[0] oldest).
func deliveryRows(t *testing.T, e *env, ep1, ep2 string) []*models.WebhookDelivery {
	t.Helper()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	status := func(n int) *int { return &n }
	ms := func(f float64) *float64 { return &f }
	body := func(evt, typ string) string {
		return fmt.Sprintf(`{"id":%q,"event":%q,"occurred_at":"2030-01-02T03:04:05Z"}`, evt, typ)
	}
	headers := func(evt, typ string, attempt int) models.Headers {
		return models.Headers{
			"Content-Type": {"application/json"}, "X-Webhook-Id": {evt}, "X-Webhook-Event": {typ},
			"X-Webhook-Attempt": {fmt.Sprint(attempt)}, "X-Webhook-Signature": {"sha256=" + strings.Repeat("ab", 32)},
		}
	}
	rows := []*models.WebhookDelivery{
		{
			EventID: "evt_a", EventType: models.EventRecordCreated, RecordID: "rec_1", EndpointID: ep1, Attempt: 1,
			RequestURL: "https://hooks.example.com/a", RequestHeaders: headers("evt_a", "record_created", 1), RequestBody: body("evt_a", "record_created"),
			ResponseStatus: status(200), ResponseHeaders: models.Headers{"Content-Type": {"text/plain"}}, ResponseBody: "ok",
			RemoteIP: "93.184.215.14", DurationMS: 41.5, DNSMS: ms(2), ConnectMS: ms(10), TLSMS: ms(20), FirstByteMS: ms(40),
			Succeeded: true,
		},
		{
			EventID: "evt_b", EventType: models.EventStatusChange, RecordID: "rec_2", EndpointID: ep1, Attempt: 2,
			RequestURL: "https://hooks.example.com/a", RequestHeaders: headers("evt_b", "status_change", 2), RequestBody: body("evt_b", "status_change"),
			Error: models.DeliveryErrTimeout, ErrorMessage: "no response within 30s", RemoteIP: "93.184.215.14",
			DurationMS: 30000, DNSMS: ms(1), ConnectMS: ms(9), TLSMS: ms(19),
		},
		{
			EventID: "evt_a", EventType: models.EventRecordCreated, RecordID: "rec_1", EndpointID: ep2, Attempt: 1,
			RequestURL: "https://other.example.com/b", RequestHeaders: headers("evt_a", "record_created", 1), RequestBody: body("evt_a", "record_created"),
			ResponseStatus: status(500), ResponseHeaders: models.Headers{}, ResponseBody: "boom",
			Error: models.DeliveryErrHTTPStatus, ErrorMessage: "the receiver answered 500", RemoteIP: "93.184.215.15", DurationMS: 12,
		},
		{
			EventID: "evt_b", EventType: models.EventStatusChange, RecordID: "rec_2", EndpointID: ep2, Attempt: 1,
			RequestURL: "https://other.example.com/b", RequestHeaders: headers("evt_b", "status_change", 1), RequestBody: body("evt_b", "status_change"),
			ResponseStatus: status(204), RemoteIP: "93.184.215.15", DurationMS: 8, Succeeded: true,
		},
	}
	for i, d := range rows {
		d.TenantID = e.tenantID
		d.WorkflowID = "webhook-delivery/" + d.EventID + "/" + d.EndpointID
		d.RunID = fmt.Sprintf("run-%d", i)
		d.StartedAt = base.Add(time.Duration(i) * time.Second)
		d.FinishedAt = d.StartedAt.Add(time.Duration(d.DurationMS * float64(time.Millisecond)))
		if err := e.store.InsertAttempt(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// deliveryPage is a page of listed attempts.
type deliveryPage struct {
	Data  []map[string]any `json:"data"`
	Total int              `json:"total"`
	Page  int              `json:"page"`
	Limit int              `json:"limit"`
}

func (p deliveryPage) ids() []string {
	out := []string{}
	for _, d := range p.Data {
		out = append(out, d["id"].(string))
	}
	return out
}

// row is a seeded row of a list: its sort key and what filters see.
type row struct {
	id    string
	at    time.Time
	group string
}

// answer is a response's status, Retry-After and error code, or the
// error of a call that got none.
type answer struct {
	status     int
	retryAfter string
	code       string
	err        error
}

// logLines collects a logger's JSON lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns the lines logged at level.
func (l *logLines) lines(t *testing.T, level string) []logLine {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec logLine
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Level == level {
			out = append(out, rec)
		}
	}
	return out
}

// newRawServer serves the real API handler on SQLite with nothing in
// front of it (no check against the OpenAPI document, which would read
// request bodies before the API does), and returns it with an admin key.
func newRawServer(t *testing.T) (srv *httptest.Server, admin string) {
	t.Helper()
	store := storetest.Open(t, models.SQLite)
	_, _, admin, err := store.CreateTenant(context.Background(), "test", 100000)
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(api.New(api.Deps{
		Store: store, Limiter: ratelimit.NewMemory(nil), Logs: discardLogs{}, Registry: prometheus.NewRegistry(),
		Log: quietLog,
	}).Handler())
	t.Cleanup(srv.Close)
	return srv, admin
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ids(rows []logRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

// limiterPrefix returns a Redis key prefix of the test's own.
func limiterPrefix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "test:" + hex.EncodeToString(b) + ":"
}

// redisLimiter is a Redis limiter for tests that count budgets: each call
// may take a second, not the production 50 ms, past which the limiter fails
// open and a loaded machine would let a call through uncounted.
func redisLimiter(t *testing.T, prefix string) *ratelimit.Redis {
	l := ratelimit.NewRedis(storetest.Redis(t), prefix)
	l.Timeout = time.Second
	return l
}

// unlimited lets every call through: the benchmarks and the fuzz target
// measure what an inbound call costs, not the 60-a-minute budget.
type unlimited struct{}

func (unlimited) Allow(context.Context, string, int) (ratelimit.Result, error) {
	return ratelimit.Result{Allowed: true, Limit: 1 << 30, Remaining: 1 << 30}, nil
}

func (unlimited) AllowN(context.Context, string, int, int) (ratelimit.Result, error) {
	return ratelimit.Result{Allowed: true, Limit: 1 << 30, Remaining: 1 << 30}, nil
}

func newInboundServer(tb testing.TB, d models.Dialect) *inboundServer {
	tb.Helper()
	store := storetest.Open(tb, d)
	tenant, _, _, err := store.CreateTenant(context.Background(), "bulk", 1000)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Deps{
		Store: store, Limiter: unlimited{}, Logs: discardLogs{}, Registry: prometheus.NewRegistry(), Log: quietLog,
	}).Handler())
	tb.Cleanup(srv.Close)
	return &inboundServer{tb: tb, store: store, tenant: tenant.ID, srv: srv}
}

// orderConfig maps {"order": {"id", "total", "customer": {"email"}}, "source"}.
func orderConfig(extra map[string]any) map[string]any {
	cfg := map[string]any{
		"mapping": []map[string]any{
			{"source": "$.payload.order.id", "field": "order_id"},
			{"source": "$.payload.order.total", "field": "total"},
			{"source": "$.payload.order.customer.email", "field": "email"},
			{"source": "$.payload.order.state", "field": "state"},
			{"source": "$.payload['source system']", "field": "custom_data.source"},
		},
		"match_fields": []string{"order_id"},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return cfg
}

// storeDeepFields overwrites a record's fields with fields and a json
// field meta nested 1,001 levels deep, as a release that did not bound
// nesting could have stored.
func storeDeepFields(t *testing.T, db *storetest.DB, recordID, fields string) {
	t.Helper()
	doc := strings.TrimSuffix(fields, "}") + `,"meta":` + nested(1001) + `}`
	if _, err := db.SQL(t).Exec(db.Rebind("UPDATE records SET fields = ? WHERE id = ?"), doc, recordID); err != nil {
		t.Fatal(err)
	}
}

// nested is a JSON array nested depth levels deep around the number 1.
func nested(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

// refusedOn checks a 422 validation_failed answer whose one detail names
// field and, in its message, bound.
func refusedOn(t *testing.T, r *resp, field string, bound int) {
	t.Helper()
	r.want(http.StatusUnprocessableEntity)
	var body struct {
		Error   string              `json:"error"`
		Details []models.FieldError `json:"details"`
	}
	r.decode(&body)
	if body.Error != "validation_failed" || len(body.Details) != 1 || body.Details[0].Field != field ||
		!strings.Contains(body.Details[0].Message, fmt.Sprint(bound)) {
		t.Errorf("got %s, want validation_failed naming %s and %d", r.body, field, bound)
	}
}

func loadOpenAPI(t testing.TB) (*openapi3.T, routers.Router) {
	t.Helper()
	s := &openAPISpec
	s.once.Do(func() {
		data, err := os.ReadFile("openapi.yaml")
		if err != nil {
			s.err = err
			return
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(data)
		if err != nil {
			s.err = fmt.Errorf("load: %w", err)
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			s.err = fmt.Errorf("validate: %w", err)
			return
		}
		router, err := gorillamux.NewRouter(doc)
		if err != nil {
			s.err = fmt.Errorf("router: %w", err)
			return
		}
		s.doc, s.router = doc, router
	})
	if s.err != nil {
		t.Fatalf("api/openapi.yaml: %v", s.err)
	}
	return s.doc, s.router
}

// validateAgainstOpenAPI wraps h so that every request and response of the
// test suite is checked against api/openapi.yaml. Every response must be
// documented: its status, its headers and its body. Requests are matched to
// their operation and validated too, but a request the document rejects
// only fails the test when the server accepted it (answered below 400):
// tests send invalid requests on purpose, and the server must refuse them.
//
// Responses pass through untouched and are copied; the copies are checked
// when the test ends, so that checking neither delays the tests' calls nor
// competes with them for the CPU (tests that race the access-log writer
// notice both), and every failure is still the test's own.
func validateAgainstOpenAPI(t *testing.T, h http.Handler) http.Handler {
	t.Helper()
	doc, router := loadOpenAPI(t)
	var (
		inFlight  sync.WaitGroup
		mu        sync.Mutex
		exchanges []*exchange
	)
	t.Cleanup(func() {
		inFlight.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, x := range exchanges {
			x.check(t, doc, router)
		}
		exchanges = nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Done()
		x := &exchange{req: r.Clone(context.Background())}
		x.reqBody, x.complete = peekBody(r)
		x.res = &tee{ResponseWriter: w}
		h.ServeHTTP(x.res, r)
		x.res.WriteHeader(http.StatusOK) // what net/http sends when nothing was written
		mu.Lock()
		exchanges = append(exchanges, x)
		mu.Unlock()
	})
}

// discardLogs is a LogSink for servers that need no database.
type discardLogs struct{}

func (discardLogs) Enqueue(models.AccessLog) bool { return true }

// bareServer is an API without a store: enough for the routes that need
// none and for requests refused before the store is asked.
func bareServer(t *testing.T) (*api.Server, *httptest.Server) {
	t.Helper()
	s := api.New(api.Deps{Logs: discardLogs{}, Log: quietLog})
	srv := httptest.NewServer(validateAgainstOpenAPI(t, s.Handler()))
	t.Cleanup(srv.Close)
	return s, srv
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// testCert is a certificate and its key, PEM, made for a test.
type testCert struct {
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
	certPEM, keyPEM string
}

// newTestCert makes a certificate named name: a CA's when issuer is nil,
// else one issuer signs; with reuse, on reuse's key (a renewal).
func newTestCert(t *testing.T, name string, issuer *testCert, reuse ...*testCert) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(reuse) > 0 {
		key = reuse[0].key
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour).Truncate(time.Second), NotAfter: time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	parent, signer := tmpl, key
	if issuer == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	} else {
		parent, signer = issuer.cert, issuer.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{cert: cert, key: key,
		certPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		keyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))}
}

// with returns a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	out := maps.Clone(m)
	out[k] = v
	return out
}

func mustEndpoint(t *testing.T, s *models.Store, tenantID, id string) *models.WebhookEndpoint {
	t.Helper()
	ep, err := s.GetEndpoint(t.Context(), tenantID, id)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}
