package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateCommand: `webhooks create` POSTs the endpoint with the URL
// read from --url-file (a broker URL with its password never goes on the
// command line: --url refuses one) and prints the masked URL, its kind and
// the secret.
func TestCreateCommand(t *testing.T) {
	fastRecovery(t)
	const password = "s3cret-f1le-only"
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if r.Method != http.MethodPost || r.URL.Path != "/api/admin/webhook-endpoints" || json.Unmarshal(b, &body) != nil {
			t.Errorf("unexpected %s %s %s", r.Method, r.URL.Path, b)
		}
		got = append(got, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		masked := strings.Replace(body["url"].(string), password, "****", 1)
		fmt.Fprintf(w, `{"id":"whe_1","kind":"amqp","url":%q,"events":["record_created"],"secret":"whsec_x"}`, masked)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"RECORDHUB_ADMIN_KEY": testAdminKey, "RECORDHUB_API_URL": srv.URL}
	rawURL := "amqp://app:" + password + "@rabbit.example.com/?exchange=records&routing_key={module}.{event_type}"

	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "create", "--url", rawURL); err == nil || !strings.Contains(err.Error(), "--url-file") {
		t.Fatalf("a password on the command line: %v, want a refusal naming --url-file", err)
	}
	file := filepath.Join(t.TempDir(), "url")
	if err := os.WriteFile(file, []byte(rawURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runWithEnv(context.Background(), env, "webhooks", "create", "--url-file", file, "--events", "record_created")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(got) != 1 || got[0]["url"] != rawURL || fmt.Sprint(got[0]["events"]) != "[record_created]" {
		t.Errorf("sent %v, want the URL from the file and the events", got)
	}
	if strings.Contains(stdout, password) || !strings.Contains(stdout, "endpoint whe_1 (amqp): amqp://app:****@") || !strings.Contains(stdout, "whsec_x") {
		t.Errorf("output %q: want the id, kind, masked URL and secret", stdout)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "create", "--url", "nats://****@nats.example.com/records"); err != nil {
		t.Errorf("a masked URL on the command line: %v", err)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "create"); err == nil {
		t.Error("no URL: no error")
	}
}
