package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/accesslog"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
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
	e.srv = httptest.NewServer(validateAgainstOpenAPI(t, srv.Handler()))
	t.Cleanup(func() {
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
