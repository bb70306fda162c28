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

	"github.com/google/go-cmp/cmp"
)

// TestUpdateCommand: `webhooks update --ordering` PATCHes the endpoint
// with exactly that setting and prints what the API answered; a value the
// API refuses is an error naming its message.
func TestUpdateCommand(t *testing.T) {
	fastRecovery(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if r.Method != http.MethodPatch || r.URL.Path != "/api/admin/webhook-endpoints/whe_1" || json.Unmarshal(b, &body) != nil || len(body) != 1 {
			t.Errorf("unexpected %s %s %s", r.Method, r.URL.Path, b)
		}
		w.Header().Set("Content-Type", "application/json")
		if body["ordering"] != "record" && body["ordering"] != "none" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"error":"validation_failed","message":"ordering: must be one of [\"none\" \"record\"]","request_id":"req_1"}`)
			return
		}
		fmt.Fprintf(w, `{"id":"whe_1","ordering":%q}`, body["ordering"])
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"RECORDHUB_ADMIN_KEY": testAdminKey, "RECORDHUB_API_URL": srv.URL}
	stdout, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1", "--ordering", "record")
	if err != nil || !strings.Contains(stdout, "endpoint whe_1: ordering record") {
		t.Fatalf("update: %v\n%s", err, stdout)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1", "--ordering", "fifo"); err == nil || !strings.Contains(err.Error(), "ordering") {
		t.Fatalf("a refused value: %v, want the API's message", err)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1"); err == nil {
		t.Fatal("nothing to change: no error")
	}
}

// TestUpdateCommandCredentials: the credential flags PATCH auth and tls
// with the secret and the PEM read from their files (never from the
// command line), --no-auth and --no-tls remove them, and the answer is
// printed with the secret masked and the certificate's expiry.
func TestUpdateCommandCredentials(t *testing.T) {
	fastRecovery(t)
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		got = append(got, body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"whe_1","ordering":"none","auth":{"type":"oauth2_client_credentials","token_url":"https://auth.example.com/token","client_id":"rh","client_secret":"<redacted>","scopes":["a"],"audience":""},`+
			`"tls":{"client_certificate":{"subject":"CN=rh","issuer":"CN=ca","not_before":"2030-01-01T00:00:00Z","not_after":"2031-01-01T00:00:00Z","sha256":"00"},"client_key":"<redacted>","ca_certificates":[]}}`)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secretFile, certFile, keyFile := file("secret", "cs-41d2\n"), file("cert.pem", "CERT PEM"), file("key.pem", "KEY PEM")
	env := map[string]string{"RECORDHUB_ADMIN_KEY": testAdminKey, "RECORDHUB_API_URL": srv.URL}
	stdout, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1",
		"--oauth2-token-url", "https://auth.example.com/token", "--oauth2-client-id", "rh", "--oauth2-client-secret-file", secretFile, "--oauth2-scopes", "a, b",
		"--tls-cert", certFile, "--tls-key", keyFile)
	if err != nil || !strings.Contains(stdout, "secret <redacted>") || !strings.Contains(stdout, "CN=rh, expires 2031-01-01T00:00:00Z") {
		t.Fatalf("update: %v\n%s", err, stdout)
	}
	want := map[string]any{
		"auth": map[string]any{"type": "oauth2_client_credentials", "token_url": "https://auth.example.com/token", "client_id": "rh", "client_secret": "cs-41d2", "scopes": []any{"a", "b"}},
		"tls":  map[string]any{"client_certificate": "CERT PEM", "client_key": "KEY PEM"},
	}
	if diff := cmp.Diff(got[0], want); diff != "" {
		t.Errorf("PATCH body (-got +want):\n%s", diff)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1", "--no-auth", "--no-tls"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got[1], map[string]any{"auth": map[string]any{}, "tls": map[string]any{}}); diff != "" {
		t.Errorf("PATCH body of --no-auth --no-tls (-got +want):\n%s", diff)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1", "--no-tls", "--tls-ca", certFile); err == nil {
		t.Error("--no-tls with --tls-ca: no error")
	}
}

// TestUpdateThrottleFlags: --rate-limit N sets rate_limit, --max-in-flight
// none (or 0) sends null, which removes it; a value that is no number is
// refused before anything is sent.
func TestUpdateThrottleFlags(t *testing.T) {
	fastRecovery(t)
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"whe_1","ordering":"none","rate_limit":{"per_second":20},"max_in_flight":null}`)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"RECORDHUB_ADMIN_KEY": testAdminKey, "RECORDHUB_API_URL": srv.URL}
	stdout, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1", "--rate-limit", "20", "--max-in-flight", "none")
	if err != nil || !strings.Contains(stdout, "rate limit 20/s, max in flight none") {
		t.Fatalf("update: %v\n%s", err, stdout)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1", "--max-in-flight", "0"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runWithEnv(context.Background(), env, "webhooks", "update", "whe_1", "--rate-limit", "fast"); err == nil {
		t.Error("--rate-limit fast: no error")
	}
	want := []string{`{"rate_limit":{"per_second":20},"max_in_flight":null}`, `{"max_in_flight":null}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("bodies sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
