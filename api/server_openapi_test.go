package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// openAPISpec is api/openapi.yaml, loaded and validated once per test binary.
var openAPISpec struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// maxCheckedRequestBody bounds the request body the validator keeps a copy
// of; larger bodies (sent to provoke a 413) pass through unchecked.
const maxCheckedRequestBody = 2 * api.MaxBodyBytes

// exchange is one request and the response it got.
type exchange struct {
	req      *http.Request
	reqBody  []byte
	complete bool // reqBody is the whole body
	res      *tee
}

// peekBody copies up to maxCheckedRequestBody bytes of r's body and puts
// them back in front of the rest; complete reports whether that was all.
func peekBody(r *http.Request) (body []byte, complete bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCheckedRequestBody+1))
	complete = err == nil && len(body) <= maxCheckedRequestBody
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	return body, complete
}

type readCloser struct {
	io.Reader
	io.Closer
}

// tee passes a response through and keeps a copy of it.
type tee struct {
	http.ResponseWriter
	header http.Header // as of WriteHeader
	status int
	body   bytes.Buffer
}

func (w *tee) WriteHeader(status int) {
	if w.status != 0 || status < 200 {
		if w.status == 0 {
			w.ResponseWriter.WriteHeader(status)
		}
		return
	}
	w.status, w.header = status, w.Header().Clone()
	w.ResponseWriter.WriteHeader(status)
}

func (w *tee) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *tee) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *tee) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (x *exchange) check(t *testing.T, doc *openapi3.T, router routers.Router) {
	ctx := context.Background()
	req, rec, complete := x.req, x.res, x.complete
	req.Body = io.NopCloser(bytes.NewReader(x.reqBody))
	what := fmt.Sprintf("%s %s → %d", req.Method, req.URL.RequestURI(), rec.status)

	route, params, err := router.FindRoute(req)
	if err != nil {
		checkUnrouted(t, doc, what, req.Method, rec)
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: bearerPresent, SkipSettingDefaults: true, MultiError: true,
			ExcludeRequestBody: !complete,
		},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr != nil && rec.status < 400 {
		t.Errorf("%s: the server accepted a request api/openapi.yaml rejects: %v", what, reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: rec.status, Header: rec.header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(rec.body.Bytes())
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		t.Errorf("%s: response does not match api/openapi.yaml: %v\nbody: %s", what, err, truncated(rec.body.Bytes()))
	}
}

// checkUnrouted checks the answer to a path or method the document does
// not have: the server's 404 not_found, or Gin's redirect of a trailing
// slash.
func checkUnrouted(t *testing.T, doc *openapi3.T, what, method string, rec *tee) {
	switch rec.status {
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return
	case http.StatusNotFound:
	default:
		t.Errorf("%s: an undocumented route must answer 404 not_found", what)
		return
	}
	if rec.header.Get("X-Request-Id") == "" {
		t.Errorf("%s: no X-Request-Id", what)
	}
	if method == http.MethodHead {
		return
	}
	var body any
	if err := json.Unmarshal(rec.body.Bytes(), &body); err != nil {
		t.Errorf("%s: the body is not JSON: %v\nbody: %s", what, err, truncated(rec.body.Bytes()))
		return
	}
	schema := doc.Components.Schemas["Error"].Value
	if err := schema.VisitJSON(body, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
		t.Errorf("%s: the body does not match the Error schema: %v\nbody: %s", what, err, truncated(rec.body.Bytes()))
	}
	if m, _ := body.(map[string]any); m["error"] != "not_found" {
		t.Errorf("%s: error %v, want not_found", what, m["error"])
	}
}

// bearerPresent satisfies the bearer scheme when the request carries a
// bearer token; whether the key is good is the server's business.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, token, _ := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return in.NewError(fmt.Errorf("no bearer token"))
	}
	return nil
}

func truncated(b []byte) []byte {
	if len(b) > 2048 {
		return append(b[:2048:2048], "…"...)
	}
	return b
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestOpenAPIServed(t *testing.T) {
	_, srv := bareServer(t)
	res, err := srv.Client().Get(srv.URL + "/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", res.StatusCode, body)
	}
	if got := res.Header.Get("Content-Type"); got != "application/yaml" {
		t.Errorf("Content-Type %q, want application/yaml", got)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(body)
	if err != nil {
		t.Fatalf("load the served document: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("the served document is not valid OpenAPI: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi %q, want 3.1", doc.OpenAPI)
	}
	file, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, file) {
		t.Error("the served document differs from api/openapi.yaml")
	}
}

var ginParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// TestOpenAPIDocumentsEveryRoute checks that the routes the server registers
// and the operations the document describes are the same.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	s, srv := bareServer(t)

	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}

	engine, ok := s.Handler().(*gin.Engine)
	if !ok {
		t.Fatalf("Server.Handler() is a %T, not a *gin.Engine: list its routes another way", s.Handler())
	}
	registered := map[string]bool{}
	for _, r := range engine.Routes() {
		op := r.Method + " " + ginParam.ReplaceAllString(r.Path, "{$1}")
		registered[op] = true
		if !documented[op] {
			t.Errorf("%s is served but not documented in api/openapi.yaml", op)
		}
	}

	// Every documented operation must reach a handler: the server's
	// "no such route" 404 means it does not exist. Requests carry no key, so
	// that they stop at authentication and need no store.
	var ops []string
	for op := range documented {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	for _, op := range ops {
		if !registered[op] {
			t.Errorf("%s is documented but not registered", op)
		}
		method, path, _ := strings.Cut(op, " ")
		path = strings.NewReplacer("{id}", "x", "{recordId}", "x").Replace(path)
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound && bytes.Contains(body, []byte("no such route")) {
			t.Errorf("%s is documented but the server has no such route", op)
		}
	}
}

// TestOpenAPITour calls every operation, on its success and its usual
// failures, so that each documented answer is checked against real
// responses even where no other test looks.
func TestOpenAPITour(t *testing.T) {
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		clock := storetest.NewClock()
		e := newEnvOn(t, storetest.OpenWithClock(t, d, clock.Now))
		for _, p := range []string{"/healthz", "/readyz", "/metrics", "/api/openapi.yaml"} {
			e.call("GET", p, "", nil).want(200)
		}
		e.call("GET", "/api/no-such-thing", e.admin, nil).want(404)
		e.call("GET", "/api/modules", "", nil).want(401)
		e.call("GET", "/api/modules", "rh_unknown", nil).want(401)
		expiresAt := clock.Now().Add(time.Hour)
		_, expiring := e.createKey(map[string]any{"admin": true, "expires_at": expiresAt.Format(time.RFC3339Nano)})

		fields := []map[string]any{
			{"name": "title", "type": "string", "required": true},
			{"name": "body", "type": "text"},
			{"name": "count", "type": "integer"},
			{"name": "price", "type": "number"},
			{"name": "done", "type": "boolean"},
			{"name": "due", "type": "datetime"},
			{"name": "email", "type": "email"},
			{"name": "site", "type": "url"},
			{"name": "size", "type": "enum", "options": []string{"s", "m"}},
			{"name": "state", "type": "status", "states": []string{"open", "closed"}, "initial": "open",
				"transitions": map[string][]string{"open": {"closed"}}},
			{"name": "extra", "type": "json"},
		}
		mod := e.createModule("tasks", fields...)
		e.call("POST", "/api/admin/modules", e.admin, map[string]any{"slug": "tasks", "name": "Again"}).want(409)
		e.call("POST", "/api/admin/modules", e.admin, map[string]any{"slug": "BAD SLUG", "name": ""}).want(422)
		e.call("POST", "/api/admin/modules", e.admin, map[string]any{"slug": "x", "name": "X", "colour": "red"}).want(400)
		e.call("POST", "/api/admin/modules", e.admin, `{"slug": "x", "name": 5}`).want(422)
		e.call("POST", "/api/admin/modules", e.admin, `{"slug":`).want(400)
		e.call("POST", "/api/admin/modules", e.admin, "slug=x", "Content-Type", "text/plain").want(415)
		e.call("POST", "/api/admin/modules", e.admin, bytes.Repeat([]byte(" "), api.MaxBodyBytes+1)).want(413)
		e.call("GET", "/api/admin/modules", e.admin, nil).want(200)
		e.call("GET", "/api/admin/modules/"+mod, e.admin, nil).want(200)
		e.call("GET", "/api/admin/modules/mod_missing", e.admin, nil).want(404)
		e.call("PATCH", "/api/admin/modules/"+mod, e.admin, map[string]any{"name": "Tasks"}).want(200)
		gone := e.createModule("gone")
		e.call("DELETE", "/api/admin/modules/"+gone, e.admin, nil).want(200)

		recs := "/api/modules/" + mod + "/records"
		full := map[string]any{
			"title": "a", "body": "long", "count": 3, "price": 1.5, "done": false, "due": "2030-01-02T03:04:05Z",
			"email": "a@example.com", "site": "https://example.com", "size": "s", "extra": []any{1, "two"},
		}
		r := e.call("POST", recs, e.admin, map[string]any{"fields": full, "custom_data": map[string]any{"k": "v"}}).want(201)
		rec := r.json()["id"].(string)
		e.call("POST", recs, e.admin, map[string]any{"fields": map[string]any{"count": "three"}}).want(422)
		e.call("POST", recs, e.admin, map[string]any{"fields": []any{}}).want(422)
		e.call("GET", recs+"?sort=updated_at&filter[size]=s&filter[done]=false&page=1&limit=5", e.admin, nil).want(200)
		e.call("GET", recs+"?limit=101", e.admin, nil).want(400)
		e.call("GET", recs+"?filter[nope]=1", e.admin, nil).want(400)
		e.call("GET", recs+"/"+rec, e.admin, nil).want(200)
		e.call("GET", recs+"/rec_missing", e.admin, nil).want(404)
		e.call("PATCH", recs+"/"+rec, e.admin, map[string]any{"fields": map[string]any{"state": "closed", "body": nil}}, "If-Match", `"1"`).want(200)
		e.call("PATCH", recs+"/"+rec, e.admin, map[string]any{"custom_data": map[string]any{"k": nil}}, "Content-Type", "application/merge-patch+json").want(200)
		e.call("PATCH", recs+"/"+rec, e.admin, map[string]any{"fields": map[string]any{"title": "b"}}, "If-Match", `"1"`).want(412)
		e.call("PATCH", recs+"/"+rec, e.admin, map[string]any{"fields": map[string]any{"state": "open"}}).want(422)
		e.call("DELETE", recs+"/"+rec, e.admin, nil).want(200)
		e.call("DELETE", recs+"/"+rec, e.admin, nil).want(404)

		readerID, reader := e.createKey(map[string]any{"name": "reader", "permissions": map[string][]string{mod: {"read"}}})
		e.call("GET", "/api/modules", reader, nil).want(200)
		e.call("POST", recs, reader, map[string]any{"fields": map[string]any{"title": "x"}}).want(403)
		e.call("GET", "/api/admin/keys", reader, nil).want(403)
		e.call("GET", "/api/admin/keys?page=1&limit=10", e.admin, nil).want(200)
		e.call("GET", "/api/admin/keys/"+readerID, e.admin, nil).want(200)
		e.call("GET", "/api/admin/keys/key_missing", e.admin, nil).want(404)
		e.call("PATCH", "/api/admin/keys/"+readerID, e.admin, map[string]any{"expires_at": "2100-01-01T00:00:00Z", "rate_limit_per_minute": 50}).want(200)
		e.call("PATCH", "/api/admin/keys/"+readerID, e.admin, map[string]any{"expires_at": nil}).want(200)
		e.call("PATCH", "/api/admin/keys/"+readerID, e.admin, map[string]any{"rate_limit_per_minute": 0}).want(422)
		e.call("POST", "/api/admin/keys/"+readerID+"/rotate", e.admin, map[string]any{"grace_seconds": 60}).want(200)
		e.call("POST", "/api/admin/keys/"+readerID+"/rotate", e.admin, nil).want(200)
		e.call("POST", "/api/admin/keys/"+readerID+"/rotate", e.admin, map[string]any{"grace_seconds": -1}).want(422)
		e.call("DELETE", "/api/admin/keys/"+readerID, e.admin, nil).want(200)
		e.call("POST", "/api/admin/keys/"+readerID+"/rotate", e.admin, nil).want(409)
		e.call("GET", "/api/modules", reader, nil).want(401)

		_, slow := e.createKey(map[string]any{"rate_limit_per_minute": 1, "admin": true})
		e.call("GET", "/api/modules", slow, nil).want(200)
		e.call("GET", "/api/modules", slow, nil).want(429)

		e.flushLogs()
		e.call("GET", "/api/admin/keys/"+readerID+"/usage", e.admin, nil).want(200)
		e.call("GET", "/api/admin/keys/"+readerID+"/usage?granularity=day", e.admin, nil).want(200)
		e.call("GET", "/api/admin/keys/"+readerID+"/usage?granularity=week", e.admin, nil).want(400)
		e.call("GET", "/api/admin/access-logs?method=GET&status=200&limit=3", e.admin, nil).want(200)
		e.call("GET", "/api/admin/access-logs?key_id="+readerID+"&from=2000-01-01T00:00:00Z", e.admin, nil).want(200)
		e.call("GET", "/api/admin/access-logs?status=abc", e.admin, nil).want(400)

		clock.Advance(time.Hour)
		if code := e.call("GET", "/api/modules", expiring, nil).want(401).errorCode(); code != "key_expired" {
			t.Errorf("expired key: error %q, want key_expired", code)
		}
	})
}

// TestOpenAPIReadinessFailure checks the 503 of /readyz, which needs a
// dependency that does not answer.
func TestOpenAPIReadinessFailure(t *testing.T) {
	s := api.New(api.Deps{Logs: discardLogs{}, Log: quietLog, Ready: []api.Check{
		{Name: "database", Check: func(context.Context) error { return nil }},
		{Name: "redis", Check: func(context.Context) error { return errors.New("connection refused") }},
	}})
	srv := httptest.NewServer(validateAgainstOpenAPI(t, s.Handler()))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error  string            `json:"error"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"database": "ok", "redis": "unavailable"}
	if res.StatusCode != http.StatusServiceUnavailable || body.Error != "unavailable" || !maps.Equal(body.Checks, want) {
		t.Errorf("got %d %+v, want 503 unavailable with checks %v", res.StatusCode, body, want)
	}
}

// The deliveries list's error filter documents every delivery error code
// the store knows, and no other: a code added to models.DeliveryErrors
// must be added to openapi.yaml.
func TestOpenAPIDeliveryErrorCodes(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	op := doc.Paths.Find("/api/admin/webhook-deliveries").Get
	if op == nil {
		t.Fatal("no GET /api/admin/webhook-deliveries in openapi.yaml")
	}
	p := op.Parameters.GetByInAndName("query", "error")
	if p == nil || p.Schema == nil || p.Schema.Value == nil {
		t.Fatal("the deliveries list documents no error filter")
	}
	var got []string
	for _, v := range p.Schema.Value.Enum {
		got = append(got, fmt.Sprint(v))
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(models.DeliveryErrors))
	if !slices.Equal(got, want) {
		t.Errorf("openapi.yaml error enum %v, want models.DeliveryErrors %v", got, want)
	}
}
