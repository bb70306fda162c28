package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeResyncAPI fakes the resync routes: the start route answers a
// running resync, the status route the statuses in turn (the last one
// again once they are used up).
func fakeResyncAPI(t *testing.T, statuses ...string) *httptest.Server {
	t.Helper()
	var (
		mu   sync.Mutex
		gets int
	)
	status := func(st string, examined int, errMsg string) string {
		e := "null"
		if errMsg != "" {
			e = fmt.Sprintf("%q", errMsg)
		}
		return fmt.Sprintf(`{"id":"rsy_1","endpoint_id":"whe_1","workflow_id":"webhook-resync/whe_1/1","position":"42","status":%q,"total":10,"examined":%d,"sent":%d,"covered":0,"error":%s}`,
			st, examined, examined, e)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testAdminKey {
			t.Errorf("Authorization %q", got)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/admin/webhook-endpoints/whe_1/resync":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, status("running", 0, ""))
		case r.Method == http.MethodGet && r.URL.Path == "/api/admin/webhook-endpoints/whe_1/resyncs/rsy_1":
			mu.Lock()
			st := statuses[min(gets, len(statuses)-1)]
			gets++
			mu.Unlock()
			switch st {
			case "running":
				fmt.Fprint(w, status("running", 5, ""))
			case "completed":
				fmt.Fprint(w, status("completed", 10, ""))
			default:
				fmt.Fprint(w, status("failed", 5, "the endpoint was disabled"))
			}
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestResyncCommand(t *testing.T) {
	fastRecovery(t)
	env := func(srv *httptest.Server) map[string]string {
		return map[string]string{"RECORDHUB_ADMIN_KEY": testAdminKey, "RECORDHUB_API_URL": srv.URL}
	}

	srv := fakeResyncAPI(t, "running")
	stdout, _, err := runWithEnv(context.Background(), env(srv), "webhooks", "resync", "whe_1")
	if err != nil || !strings.Contains(stdout, "resync rsy_1 started") || !strings.Contains(stdout, "/resyncs/rsy_1") {
		t.Fatalf("without --wait: %v\n%s", err, stdout)
	}

	srv = fakeResyncAPI(t, "running", "completed")
	stdout, stderr, err := runWithEnv(context.Background(), env(srv), "webhooks", "resync", "whe_1", "--wait")
	if err != nil || !strings.Contains(stdout, "resync rsy_1 completed: 10 records examined, 10 sent") || !strings.Contains(stderr, "5 of 10 records") {
		t.Fatalf("--wait: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}

	srv = fakeResyncAPI(t, "failed")
	stdout, _, err = runWithEnv(context.Background(), env(srv), "webhooks", "resync", "--json", "--wait", "whe_1")
	if err == nil || !strings.Contains(err.Error(), "the endpoint was disabled") {
		t.Fatalf("a failed resync: %v, want its reason", err)
	}
	var final map[string]any
	if jerr := json.Unmarshal([]byte(stdout), &final); jerr != nil || final["status"] != "failed" {
		t.Fatalf("--json printed %q (%v), want the final status object", stdout, jerr)
	}

	if _, _, err := runWithEnv(context.Background(), map[string]string{"RECORDHUB_API_URL": srv.URL}, "webhooks", "resync", "whe_1"); err == nil || !strings.Contains(err.Error(), "RECORDHUB_ADMIN_KEY is not set") {
		t.Fatalf("no key: %v", err)
	}
}
