package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	testAdminKey   = "rh_recover_test_key_0123456789abcdef"
	testEndpointID = "whe_1"
	testRecoveryID = "rcv_1"
	testWorkflowID = "webhook-recovery/whe_1/1"
)

// answer is one scripted answer of the fake API; garbage answers bytes
// that are not HTTP, which the client sees as a network error.
type answer struct {
	status     int
	body       string
	retryAfter string
	garbage    bool
}

// fakeRecoveryAPI fakes the API's two recovery routes: the start route
// gives start, the status route gives statuses in turn (the last one again
// once they are used up). It checks method, path and key of every request.
type fakeRecoveryAPI struct {
	t        *testing.T
	srv      *httptest.Server
	start    answer
	statuses []answer
	// onStatus, when set, is called with the number of status requests
	// so far, before answering one.
	onStatus func(n int)

	mu    sync.Mutex
	posts []string // bodies of start requests
	gets  int
	calls int
}

func newFakeRecoveryAPI(t *testing.T, start answer, statuses ...answer) *fakeRecoveryAPI {
	t.Helper()
	f := &fakeRecoveryAPI{t: t, start: start, statuses: statuses}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRecoveryAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if got, want := r.Header.Get("Authorization"), "Bearer "+testAdminKey; got != want {
		f.t.Errorf("%s %s: Authorization %q, want %q", r.Method, r.URL.Path, got, want)
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/admin/webhook-endpoints/"+testEndpointID+"/recover":
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			f.t.Errorf("start request Content-Type %q, want application/json", ct)
		}
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.posts = append(f.posts, string(b))
		f.mu.Unlock()
		f.write(w, f.start)
	case r.Method == http.MethodGet && r.URL.Path == "/api/admin/webhook-endpoints/"+testEndpointID+"/recoveries/"+testRecoveryID:
		f.mu.Lock()
		f.gets++
		n := f.gets
		f.mu.Unlock()
		if f.onStatus != nil {
			f.onStatus(n)
		}
		if len(f.statuses) == 0 {
			f.t.Errorf("unexpected status request %d", n)
			http.Error(w, "no status scripted", http.StatusInternalServerError)
			return
		}
		f.write(w, f.statuses[min(n, len(f.statuses))-1])
	default:
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

func (f *fakeRecoveryAPI) write(w http.ResponseWriter, a answer) {
	if a.garbage {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			f.t.Errorf("hijack: %v", err)
			return
		}
		buf.WriteString("this is not HTTP\r\n\r\n")
		buf.Flush()
		conn.Close()
		return
	}
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (f *fakeRecoveryAPI) counts() (calls, gets int, posts []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.gets, append([]string(nil), f.posts...)
}

// env is the environment of a support engineer's shell aimed at the fake.
func (f *fakeRecoveryAPI) env() map[string]string {
	return map[string]string{"RECORDHUB_ADMIN_KEY": testAdminKey, "RECORDHUB_API_URL": f.srv.URL}
}

var started = answer{status: http.StatusAccepted, body: `{"recovery_id":"` + testRecoveryID + `","workflow_id":"` + testWorkflowID + `"}`}

// statusAnswer is the status route's answer for a recovery in state status.
func statusAnswer(status string, found, replayed, failed int, errMsg string) answer {
	e, finished := "null", "null"
	if errMsg != "" {
		b, _ := json.Marshal(errMsg)
		e = string(b)
	}
	if status != "running" {
		finished = `"2026-01-02T03:05:00Z"`
	}
	return answer{status: http.StatusOK, body: fmt.Sprintf(`{"id":%q,"endpoint_id":%q,"workflow_id":%q,"since":"2026-01-02T01:00:00Z","until":"2026-01-02T03:00:00Z","status":%q,"found":%d,"replayed":%d,"failed":%d,"error":%s,"started_at":"2026-01-02T03:00:00Z","finished_at":%s}`,
		testRecoveryID, testEndpointID, testWorkflowID, status, found, replayed, failed, e, finished)}
}

// recordWaits makes the command note the waits it asks for and go on at
// once, so a test checks the waits themselves rather than how long it took.
func recordWaits(t *testing.T) func() []time.Duration {
	t.Helper()
	saved := recoverTiming.sleep
	var mu sync.Mutex
	var waits []time.Duration
	recoverTiming.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	t.Cleanup(func() { recoverTiming.sleep = saved })
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

// TestRecoverFollowsToCompletion starts a recovery with flags before and
// after the endpoint id and follows it through changing counts to its end.
func TestRecoverFollowsToCompletion(t *testing.T) {
	fastRecovery(t)
	// An until in another zone than UTC, to see it passed on as given.
	until := time.Now().Add(-30 * time.Minute).In(time.FixedZone("", 2*3600)).Truncate(time.Second).Format(time.RFC3339)
	for _, c := range []struct {
		name string
		args []string
		env  func(f *fakeRecoveryAPI) map[string]string
	}{
		{"flags after the id", []string{"webhooks", "recover", testEndpointID, "--since", "2h", "--until", until}, (*fakeRecoveryAPI).env},
		{"flags before the id, --api", nil, func(f *fakeRecoveryAPI) map[string]string {
			return map[string]string{"RECORDHUB_ADMIN_KEY": testAdminKey, "RECORDHUB_API_URL": "http://127.0.0.1:1"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeRecoveryAPI(t, started,
				statusAnswer("running", 0, 0, 0, ""),
				statusAnswer("running", 120, 60, 1, ""),
				statusAnswer("completed", 120, 118, 2, ""))
			args := c.args
			if args == nil {
				// --api wins over RECORDHUB_API_URL, which points nowhere.
				args = []string{"webhooks", "recover", "--since=2h", "--api", f.srv.URL + "/", "--until", until, testEndpointID}
			}
			before := time.Now()
			stdout, stderr, err := runWithEnv(context.Background(), c.env(f), args...)
			if err != nil {
				t.Fatalf("recover: %v (stderr %q)", err, stderr)
			}

			want := []string{
				"recovery " + testRecoveryID + " started (workflow " + testWorkflowID + ")",
				"recovery " + testRecoveryID + " completed: found 120, replayed 118, failed 2",
			}
			if diff := cmp.Diff(lines(stdout), want); diff != "" {
				t.Errorf("stdout (-got +want):\n%s", diff)
			}
			// Not a terminal: one progress line per change.
			wantProgress := []string{
				"recovering " + testEndpointID + ": found 0, replayed 0, failed 0 (running)",
				"recovering " + testEndpointID + ": found 120, replayed 60, failed 1 (running)",
				"recovering " + testEndpointID + ": found 120, replayed 118, failed 2 (completed)",
			}
			if diff := cmp.Diff(lines(stderr), wantProgress); diff != "" {
				t.Errorf("progress on stderr (-got +want):\n%s", diff)
			}

			_, gets, posts := f.counts()
			if gets != 3 {
				t.Errorf("%d status requests, want 3 (until completed)", gets)
			}
			if len(posts) != 1 {
				t.Fatalf("%d start requests, want 1", len(posts))
			}
			var body map[string]string
			if err := json.Unmarshal([]byte(posts[0]), &body); err != nil {
				t.Fatalf("start body %s: %v", posts[0], err)
			}
			if len(body) != 2 || body["until"] != until {
				t.Errorf("start body %s, want since and until %q exactly", posts[0], until)
			}
			since, err := time.Parse(time.RFC3339, body["since"])
			if err != nil {
				t.Fatalf("since %q: %v", body["since"], err)
			}
			if d := before.Add(-2 * time.Hour).Sub(since); d < -time.Minute || d > time.Minute {
				t.Errorf("--since 2h sent %s, %s away from 2 h ago", since, d)
			}
		})
	}
}

// TestRecoverCapped: a recovery that stopped at its cap says so, with the
// --since (and the same --until) that continues it.
func TestRecoverCapped(t *testing.T) {
	fastRecovery(t)
	capped := statusAnswer("completed", 10000, 9990, 10, "")
	capped.body = strings.Replace(capped.body, `}`, `,"capped":true,"capped_at_event_id":"evt_9","next_since":"2026-01-02T02:10:00.5Z"}`, 1)
	f := newFakeRecoveryAPI(t, started, capped)
	stdout, stderr, err := runWithEnv(context.Background(), f.env(), "webhooks", "recover", testEndpointID, "--since", "2h")
	if err != nil {
		t.Fatalf("recover: %v (stderr %q)", err, stderr)
	}
	want := []string{
		"recovery " + testRecoveryID + " started (workflow " + testWorkflowID + ")",
		"recovery " + testRecoveryID + " completed: found 10000, replayed 9990, failed 10",
		"recovery " + testRecoveryID + " was capped: events of its window are left; continue with --since 2026-01-02T02:10:00.5Z --until 2026-01-02T03:00:00Z",
	}
	if diff := cmp.Diff(want, lines(stdout)); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}

// TestRecoverFailedStatus: a recovery that fails makes the command fail
// with the recovery's own error.
func TestRecoverFailedStatus(t *testing.T) {
	fastRecovery(t)
	const reason = "list deliveries: database is locked"
	f := newFakeRecoveryAPI(t, started, statusAnswer("running", 3, 1, 0, ""), statusAnswer("failed", 3, 1, 0, reason))
	stdout, _, err := runWithEnv(context.Background(), f.env(), "webhooks", "recover", testEndpointID, "--since", "90m")
	if err == nil || !strings.Contains(err.Error(), reason) || !strings.Contains(err.Error(), testRecoveryID+" failed") {
		t.Fatalf("error %v, want one saying %s failed: %s", err, testRecoveryID, reason)
	}
	if strings.Contains(stdout, "completed") {
		t.Errorf("stdout %q reports a completion", stdout)
	}
}

// TestRecoverAPIErrors: an error answer to the start request is shown as
// its code and message (and field messages), and nothing is polled.
func TestRecoverAPIErrors(t *testing.T) {
	fastRecovery(t)
	for _, c := range []struct {
		status int
		body   string
		want   []string
	}{
		{http.StatusNotFound, `{"error":"not_found","message":"webhook endpoint not found","request_id":"req_404"}`,
			[]string{"not_found: webhook endpoint not found", "req_404"}},
		{http.StatusConflict, `{"error":"conflict","message":"the endpoint is disabled; enable it first","request_id":"req_409"}`,
			[]string{"conflict: the endpoint is disabled; enable it first"}},
		{http.StatusUnprocessableEntity, `{"error":"validation_failed","message":"the request did not pass validation","request_id":"req_422","details":[{"field":"since","message":"must be in the past"},{"field":"until","message":"must be after since"}]}`,
			[]string{"validation_failed: the request did not pass validation", "since: must be in the past", "until: must be after since"}},
		{http.StatusForbidden, `{"error":"forbidden","message":"an admin key is required","request_id":"req_403"}`,
			[]string{"forbidden: an admin key is required", "RECORDHUB_ADMIN_KEY"}},
		{http.StatusBadGateway, `<html>bad gateway</html>`, []string{"HTTP 502: Bad Gateway"}},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			f := newFakeRecoveryAPI(t, answer{status: c.status, body: c.body})
			stdout, _, err := runWithEnv(context.Background(), f.env(), "webhooks", "recover", testEndpointID, "--since", "2h")
			if err == nil {
				t.Fatalf("recover succeeded, printing %q", stdout)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if calls, gets, _ := f.counts(); calls != 1 || gets != 0 {
				t.Errorf("%d requests, %d status requests; want the start request only", calls, gets)
			}
		})
	}
}

// TestRecoverCommandLineErrors: mistakes on the command line fail before
// any request.
func TestRecoverCommandLineErrors(t *testing.T) {
	fastRecovery(t)
	f := newFakeRecoveryAPI(t, started, statusAnswer("completed", 0, 0, 0, ""))
	noKey := f.env()
	delete(noKey, "RECORDHUB_ADMIN_KEY")
	blankKey := f.env()
	blankKey["RECORDHUB_ADMIN_KEY"] = "  "
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no admin key", noKey, []string{"webhooks", "recover", testEndpointID, "--since", "2h"}, "RECORDHUB_ADMIN_KEY is not set"},
		{"blank admin key", blankKey, []string{"webhooks", "recover", testEndpointID, "--since", "2h"}, "RECORDHUB_ADMIN_KEY is not set"},
		{"no since", f.env(), []string{"webhooks", "recover", testEndpointID}, "--since is required"},
		{"bad since", f.env(), []string{"webhooks", "recover", testEndpointID, "--since", "yesterday"}, "neither a duration"},
		{"negative since", f.env(), []string{"webhooks", "recover", testEndpointID, "--since", "-2h"}, "must be positive"},
		{"bad until", f.env(), []string{"webhooks", "recover", testEndpointID, "--since", "2h", "--until", "2026-13-01"}, "--until"},
		{"until before since", f.env(), []string{"webhooks", "recover", testEndpointID, "--since", "1h", "--until", "2h"}, "--until must be after --since"},
		{"no endpoint", f.env(), []string{"webhooks", "recover", "--since", "2h"}, "usage"},
		{"two endpoints", f.env(), []string{"webhooks", "recover", testEndpointID, "whe_2", "--since", "2h"}, "usage"},
		{"unknown flag", f.env(), []string{"webhooks", "recover", testEndpointID, "--since", "2h", "--key", "x"}, "not defined"},
		{"bad api", f.env(), []string{"webhooks", "recover", testEndpointID, "--since", "2h", "--api", "ftp://example.com"}, "API URL"},
		{"unknown subcommand", f.env(), []string{"webhooks", "replay", testEndpointID}, `unknown webhooks command "replay"`},
		{"no subcommand", f.env(), []string{"webhooks"}, "no webhooks command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runWithEnv(context.Background(), c.env, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
			}
		})
	}
	if calls, _, _ := f.counts(); calls != 0 {
		t.Errorf("%d requests reached the API, want none", calls)
	}
}

// TestRecoverDetach returns after the 202 without polling.
func TestRecoverDetach(t *testing.T) {
	fastRecovery(t)
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", asJSON), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := newFakeRecoveryAPI(t, started, statusAnswer("running", 0, 0, 0, ""))
			f.onStatus = func(int) { cancel() } // a detached command that polls stops here
			args := []string{"webhooks", "recover", testEndpointID, "--since", "2h", "--detach"}
			if asJSON {
				args = append(args, "--json")
			}
			stdout, _, err := runWithEnv(ctx, f.env(), args...)
			if err != nil {
				t.Fatal(err)
			}
			if _, gets, _ := f.counts(); gets != 0 {
				t.Errorf("%d status requests, want none", gets)
			}
			if !asJSON {
				want := "recovery " + testRecoveryID + " started (workflow " + testWorkflowID + ")"
				if got := lines(stdout)[0]; got != want {
					t.Errorf("first line %q, want %q", got, want)
				}
				if !strings.Contains(stdout, f.srv.URL+"/api/admin/webhook-endpoints/"+testEndpointID+"/recoveries/"+testRecoveryID) {
					t.Errorf("stdout %q lacks the status URL", stdout)
				}
				return
			}
			var got map[string]string
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("stdout %q: %v", stdout, err)
			}
			if diff := cmp.Diff(got, map[string]string{"recovery_id": testRecoveryID, "workflow_id": testWorkflowID}); diff != "" {
				t.Errorf("--detach --json (-got +want):\n%s", diff)
			}
		})
	}
}

// TestRecoverJSON prints the final status object, and nothing else, on
// stdout.
func TestRecoverJSON(t *testing.T) {
	fastRecovery(t)
	final := statusAnswer("completed", 7, 7, 0, "")
	f := newFakeRecoveryAPI(t, started, statusAnswer("running", 2, 1, 0, ""), final)
	stdout, stderr, err := runWithEnv(context.Background(), f.env(), "webhooks", "recover", "--json", testEndpointID, "--since", "2h")
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout %q is not one JSON object: %v", stdout, err)
	}
	json.Unmarshal([]byte(final.body), &want)
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("final object (-got +want):\n%s", diff)
	}
	if !strings.Contains(stderr, "recovery "+testRecoveryID+" started") || !strings.Contains(stderr, "found 2, replayed 1, failed 0 (running)") {
		t.Errorf("stderr %q lacks the start line or the progress", stderr)
	}
}

// TestRecoverRidesOutTrouble: a 429 is waited out, network errors and 503s
// while polling are retried, and too many in a row fail.
func TestRecoverRidesOutTrouble(t *testing.T) {
	fastRecovery(t)
	limited := answer{status: http.StatusTooManyRequests, retryAfter: "3", body: `{"error":"rate_limited","message":"rate limit of 60 requests per minute exceeded","request_id":"req_429","retry_after":3}`}
	unavailable := answer{status: http.StatusServiceUnavailable, body: `{"error":"unavailable","message":"try again","request_id":"req_503"}`}
	broken := answer{garbage: true}

	t.Run("recovers", func(t *testing.T) {
		f := newFakeRecoveryAPI(t, started, statusAnswer("running", 1, 0, 0, ""), limited, broken, unavailable, broken, statusAnswer("completed", 1, 1, 0, ""))
		saved := recoverTiming.maxRetryAfter
		recoverTiming.maxRetryAfter = 2 * time.Second
		t.Cleanup(func() { recoverTiming.maxRetryAfter = saved })
		waits := recordWaits(t)
		stdout, stderr, err := runWithEnv(context.Background(), f.env(), "webhooks", "recover", testEndpointID, "--since", "2h")
		if err != nil {
			t.Fatalf("recover: %v (stderr %q)", err, stderr)
		}
		if !strings.Contains(stdout, "completed: found 1, replayed 1, failed 0") {
			t.Errorf("stdout %q", stdout)
		}
		if _, gets, _ := f.counts(); gets != 6 {
			t.Errorf("%d status requests, want 6", gets)
		}
		// A poll, then the 429's Retry-After: 3 bounded by maxRetryAfter,
		// then the backoff doubling over three transient errors.
		ms := time.Millisecond
		if diff := cmp.Diff([]time.Duration{ms, 2 * time.Second, ms, 2 * ms, 4 * ms}, waits()); diff != "" {
			t.Errorf("waits (-want +got):\n%s", diff)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		f := newFakeRecoveryAPI(t, started, statusAnswer("running", 1, 0, 0, ""), broken)
		_, _, err := runWithEnv(context.Background(), f.env(), "webhooks", "recover", testEndpointID, "--since", "2h")
		if err == nil || !strings.Contains(err.Error(), "/recoveries/"+testRecoveryID) {
			t.Fatalf("error %v, want one naming the status URL", err)
		}
		if _, gets, _ := f.counts(); gets != 1+pollAttempts {
			t.Errorf("%d status requests, want %d", gets, 1+pollAttempts)
		}
	})
	t.Run("start is not repeated after a network error", func(t *testing.T) {
		f := newFakeRecoveryAPI(t, broken)
		if _, _, err := runWithEnv(context.Background(), f.env(), "webhooks", "recover", testEndpointID, "--since", "2h"); err == nil {
			t.Fatal("recover succeeded")
		}
		if _, _, posts := f.counts(); len(posts) != 1 {
			t.Errorf("%d start requests, want 1", len(posts))
		}
	})
}

// TestRecoverInterrupted: cancelling (Ctrl-C) stops the waiting and says
// where the recovery, which goes on, can be followed.
func TestRecoverInterrupted(t *testing.T) {
	fastRecovery(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeRecoveryAPI(t, started, statusAnswer("running", 5, 2, 0, ""))
	f.onStatus = func(n int) {
		if n == 2 {
			cancel()
		}
	}
	_, _, err := runWithEnv(ctx, f.env(), "webhooks", "recover", testEndpointID, "--since", "2h")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	for _, w := range []string{"goes on in the background", testWorkflowID, f.srv.URL + "/api/admin/webhook-endpoints/" + testEndpointID + "/recoveries/" + testRecoveryID} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// TestRecoverProgressOnTerminal rewrites one line in place.
func TestRecoverProgressOnTerminal(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, terminal: true}
	p.show("recovering whe_1: found 10, replayed 9, failed 1 (running)")
	p.show("recovering whe_1: found 10, replayed 9, failed 1 (running)")
	p.show("recovering whe_1: found 10, replayed 10, failed 0 (done)")
	p.end()
	want := "\rrecovering whe_1: found 10, replayed 9, failed 1 (running)" +
		"\rrecovering whe_1: found 10, replayed 10, failed 0 (done)  " + "\n"
	if got := b.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRecoverAPIBase(t *testing.T) {
	for _, c := range []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"", nil, "http://127.0.0.1:8080"},
		{"", map[string]string{"RECORDHUB_HTTP_ADDR": "127.0.0.1:9090"}, "http://127.0.0.1:9090"},
		{"", map[string]string{"RECORDHUB_HTTP_ADDR": "0.0.0.0:8080"}, "http://127.0.0.1:8080"},
		{"", map[string]string{"RECORDHUB_HTTP_ADDR": ":7070"}, "http://127.0.0.1:7070"},
		{"", map[string]string{"RECORDHUB_HTTP_ADDR": ":7070", "RECORDHUB_API_URL": "https://hub.example.com/"}, "https://hub.example.com"},
		{"http://10.0.0.5:8080", map[string]string{"RECORDHUB_API_URL": "https://hub.example.com"}, "http://10.0.0.5:8080"},
	} {
		got, err := apiBase(c.flag, func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
		if err != nil || got != c.want {
			t.Errorf("apiBase(%q, %v) = %q, %v; want %q", c.flag, c.env, got, err, c.want)
		}
	}
}

// TestWebhooksUsage: help lists the command; webhooks alone shows usage.
func TestWebhooksUsage(t *testing.T) {
	stdout, _, err := runWithEnv(context.Background(), nil, "help")
	if err != nil || !strings.Contains(stdout, "recordhub webhooks recover ENDPOINT_ID --since") {
		t.Errorf("help: %v, %q lacks webhooks recover", err, stdout)
	}
	_, stderr, err := runWithEnv(context.Background(), nil, "webhooks", "purge")
	if err == nil || !strings.Contains(stderr, "usage: recordhub webhooks recover") {
		t.Errorf("webhooks purge: %v, stderr %q; want an error and the usage", err, stderr)
	}
}
