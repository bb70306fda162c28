package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestServe runs the real service on port 0: bootstrap key, a record
// written and read, and on shutdown every access-log row is flushed.
func TestServe(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, d)
			cfg.BootstrapAdminKey = "rh_bootstrap_" + strings.Repeat("k", 20)
			var out syncBuffer
			base, stop := startService(t, cfg, &out)
			key := cfg.BootstrapAdminKey

			if st, _ := call(t, "GET", base+"/healthz", "", ""); st != 200 {
				t.Fatalf("healthz %d", st)
			}
			if st, body := call(t, "GET", base+"/readyz", "", ""); st != 200 {
				t.Fatalf("readyz %d %v", st, body)
			}
			st, mod := call(t, "POST", base+"/api/admin/modules", key, `{"slug":"notes","name":"Notes","fields":[{"name":"text","type":"text","required":true}]}`)
			if st != 201 {
				t.Fatalf("create module: %d %v", st, mod)
			}
			const n = 25
			for i := range n {
				if st, body := call(t, "POST", base+"/api/modules/"+mod["id"].(string)+"/records", key, `{"fields":{"text":"hello"}}`); st != 201 {
					t.Fatalf("create record %d: %d %v", i, st, body)
				}
			}
			if st, _ := call(t, "GET", base+"/api/modules", "rh_wrong", ""); st != 401 {
				t.Fatalf("wrong key: %d", st)
			}
			if err := stop(); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
			if strings.Contains(out.String(), key) {
				t.Errorf("the configured bootstrap key was printed")
			}

			// Every call was logged, the last ones during shutdown.
			store, err := openStore(context.Background(), cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			logs, total, err := store.ListAccessLogs(context.Background(), mustTenant(t, store, key), models.AccessLogQuery{Page: models.Page{Page: 1, Limit: 100}})
			if err != nil {
				t.Fatal(err)
			}
			if total != n+1 {
				t.Errorf("%d access-log rows for the tenant, want %d (module + %d records)", total, n+1, n)
			}
			if len(logs) > 0 && logs[0].Status != 201 {
				t.Errorf("newest row %+v", logs[0])
			}
		})
	}
}

// TestBootstrapGeneratedKey: without a configured key the first start
// prints a generated admin key once; later starts print none.
func TestBootstrapGeneratedKey(t *testing.T) {
	cfg := testConfig(t, models.SQLite)
	var out syncBuffer
	_, stop := startService(t, cfg, &out)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var key string
	for _, f := range strings.Fields(out.String()) {
		if strings.HasPrefix(f, "rh_") {
			key = f
		}
	}
	if key == "" {
		t.Fatalf("no admin key printed: %q", out.String())
	}
	var again syncBuffer
	base, stop := startService(t, cfg, &again)
	if strings.Contains(again.String(), "rh_") {
		t.Errorf("second start printed a key: %q", again.String())
	}
	if st, body := call(t, "GET", base+"/api/admin/keys", key, ""); st != 200 {
		t.Fatalf("printed key does not work: %d %v", st, body)
	}
	stop()
}

func TestTenantCommands(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, d)
			env := map[string]string{"RECORDHUB_DATA_DIR": cfg.DataDir, "DATABASE_URL": cfg.DatabaseURL}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			ctx := context.Background()

			// The tenant commands use an existing database only.
			if err := runCommand(ctx, []string{"migrate"}, lookup, nil, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := runCommand(ctx, []string{"tenant", "create", "acme", "--json"}, lookup, nil, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			var created struct {
				TenantID string `json:"tenant_id"`
				AdminKey string `json:"admin_key"`
			}
			if err := json.Unmarshal(out.Bytes(), &created); err != nil || created.TenantID == "" || created.AdminKey == "" {
				t.Fatalf("tenant create --json printed %q (%v)", out.String(), err)
			}

			const aiKey = "sk-test-0123456789"
			if err := runCommand(ctx, []string{"tenant", "set-ai-key", created.TenantID}, lookup, strings.NewReader(aiKey+"\n"), io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			err := runCommand(ctx, []string{"tenant", "set-ai-key", "ten_missing"}, lookup, strings.NewReader(aiKey), io.Discard, io.Discard)
			if models.ErrorKind(err) != models.KindNotFound {
				t.Errorf("set-ai-key on a missing tenant: %v, want not found", err)
			}
			if err := runCommand(ctx, []string{"tenant", "create"}, lookup, nil, io.Discard, io.Discard); err == nil {
				t.Error("tenant create without a name succeeded")
			}

			store, err := openStore(ctx, cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if got := mustTenant(t, store, created.AdminKey); got != created.TenantID {
				t.Errorf("admin key belongs to %s, want %s", got, created.TenantID)
			}
			if got := storedAIKey(t, cfg, created.TenantID); got != aiKey {
				t.Errorf("AI key %q, want %q", got, aiKey)
			}

			// create-key mints a key that authenticates for that tenant: an
			// admin key with --admin, a plain one without.
			for _, admin := range []bool{true, false} {
				args := []string{"tenant", "create-key", created.TenantID, "--name", "rescue", "--json"}
				if admin {
					args = append(args, "--admin")
				}
				out.Reset()
				if err := runCommand(ctx, args, lookup, nil, &out, io.Discard); err != nil {
					t.Fatal(err)
				}
				var minted struct {
					TenantID string `json:"tenant_id"`
					KeyID    string `json:"key_id"`
					Name     string `json:"name"`
					Admin    bool   `json:"admin"`
					Key      string `json:"key"`
				}
				if err := json.Unmarshal(out.Bytes(), &minted); err != nil || minted.Key == "" || minted.KeyID == "" {
					t.Fatalf("create-key --json printed %q (%v)", out.String(), err)
				}
				k, err := store.Authenticate(ctx, minted.Key)
				if err != nil {
					t.Fatalf("the minted key does not authenticate: %v", err)
				}
				if k.TenantID != created.TenantID || k.ID != minted.KeyID || k.Admin != admin || k.Name != "rescue" || minted.Admin != admin {
					t.Errorf("create-key %v made %+v (printed %+v)", args[3:], k, minted)
				}
			}
			err = runCommand(ctx, []string{"tenant", "create-key", "ten_missing", "--admin"}, lookup, nil, io.Discard, io.Discard)
			if models.ErrorKind(err) != models.KindNotFound {
				t.Errorf("create-key on a missing tenant: %v, want not found", err)
			}
			for _, args := range [][]string{{"tenant", "create-key"}, {"tenant", "create-key", created.TenantID, "--root"}, {"tenant", "create-key", created.TenantID, "--name"}} {
				var stderr bytes.Buffer
				if err := runCommand(ctx, args, lookup, nil, io.Discard, &stderr); err == nil || !strings.Contains(stderr.String(), "usage: recordhub tenant create-key") {
					t.Errorf("%v: %v, stderr %q; want an error and the usage", args, err, stderr.String())
				}
			}

			// At rest it is sealed, never the plaintext.
			if d == models.SQLite {
				raw, err := os.ReadFile(filepath.Join(cfg.DataDir, "recordhub.db"))
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(raw, []byte(aiKey)) || bytes.Contains(raw, []byte(created.AdminKey)) {
					t.Error("the database file holds a secret in clear")
				}
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{"defaults", map[string]string{}, true},
		{"bad limit", map[string]string{"RECORDHUB_DEFAULT_RATE_LIMIT": "0"}, false},
		{"bad duration", map[string]string{"RECORDHUB_WEBHOOK_TIMEOUT": "soon"}, false},
		{"bad database", map[string]string{"DATABASE_URL": "mysql://x"}, false},
		{"bad migrate flag", map[string]string{"RECORDHUB_AUTO_MIGRATE": "maybe"}, false},
		{"public URL", map[string]string{"RECORDHUB_PUBLIC_URL": "https://records.example.com/base"}, true},
		{"public URL without scheme", map[string]string{"RECORDHUB_PUBLIC_URL": "records.example.com"}, false},
		{"public URL with a query", map[string]string{"RECORDHUB_PUBLIC_URL": "https://records.example.com/?x=1"}, false},
		{"task queue", map[string]string{"RECORDHUB_TEMPORAL_TASK_QUEUE": "deployment-b"}, true},
		{"task queue with spaces", map[string]string{"RECORDHUB_TEMPORAL_TASK_QUEUE": " b "}, false},
		{"pool of one", map[string]string{"RECORDHUB_DATABASE_MAX_CONNS": "1"}, false},
		{"one-letter admin key", map[string]string{"RECORDHUB_BOOTSTRAP_ADMIN_KEY": "a"}, false},
		{"31-character admin key", map[string]string{"RECORDHUB_BOOTSTRAP_ADMIN_KEY": strings.Repeat("k", 31)}, false},
		{"32-character admin key", map[string]string{"RECORDHUB_BOOTSTRAP_ADMIN_KEY": strings.Repeat("k", 32)}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := configFromEnv(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok=%v", err, c.ok)
			}
			if c.ok && (cfg.HTTPAddr != "127.0.0.1:8080" || cfg.DefaultRateLimit != 600 || cfg.WebhookTimeout != 30*time.Second || cfg.TemporalUIAddr != "127.0.0.1:8233" || !cfg.AutoMigrate || cfg.DatabaseMaxConns != 20) {
				t.Errorf("defaults %+v", cfg)
			}
			if want := cmp.Or(c.env["RECORDHUB_TEMPORAL_TASK_QUEUE"], "recordhub-webhooks"); c.ok && cfg.TemporalTaskQueue != want {
				t.Errorf("task queue %q, want %q", cfg.TemporalTaskQueue, want)
			}
		})
	}
	cfg, err := configFromEnv(func(k string) (string, bool) {
		if k == "RECORDHUB_TEMPORAL_UI_ADDR" {
			return "", true
		}
		return "", false
	})
	if err != nil || cfg.TemporalUIAddr != "" {
		t.Errorf("an empty RECORDHUB_TEMPORAL_UI_ADDR must turn the UI off: %q %v", cfg.TemporalUIAddr, err)
	}
}

func TestServeRoles(t *testing.T) {
	for _, c := range []struct {
		args    []string
		env     map[string]string
		wantErr string
	}{
		{[]string{"serve", "--role", "api"}, nil, "needs TEMPORAL_ADDRESS"},
		{[]string{"serve", "--role", "worker"}, nil, "needs TEMPORAL_ADDRESS"},
		{[]string{"serve", "--role", "both"}, nil, "--role must be all, api or worker"},
		{[]string{"serve", "--role", "api"}, map[string]string{"RECORDHUB_DEFAULT_RATE_LIMIT": "0"}, "RECORDHUB_DEFAULT_RATE_LIMIT"},
	} {
		lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		err := runCommand(context.Background(), c.args, lookup, nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%v: %v, want an error containing %q", c.args, err, c.wantErr)
		}
	}
}

// TestInterruptExitsZero runs "recordhub serve" as a process, through
// main's own signal handling, and interrupts it as Ctrl-C does: it shuts
// down and exits 0.
func TestInterruptExitsZero(t *testing.T) {
	skipShort(t)
	cfg := testConfig(t, models.SQLite)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RECORDHUB_E2E_MAIN_ARGS=serve",
		"RECORDHUB_HTTP_ADDR="+addr, "RECORDHUB_DATA_DIR="+cfg.DataDir,
		fmt.Sprintf("RECORDHUB_TEMPORAL_PORT=%d", cfg.TemporalPort), "RECORDHUB_TEMPORAL_UI_ADDR=")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	storetest.Eventually(t, 120*time.Second, "the service to answer /readyz", func() bool {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); err != nil || code != 0 {
		t.Fatalf("exit status %d (%v) after SIGINT, want 0; output:\n%s", code, err, out.String())
	}
	if !strings.Contains(out.String(), `"msg":"stopped"`) {
		t.Errorf("no graceful shutdown in the output:\n%s", out.String())
	}
}
