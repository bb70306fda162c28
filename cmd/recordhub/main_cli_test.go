package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// unreadable is a stdin that fails the test when read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("stdin was read")
	return 0, io.EOF
}

// inEmptyDir makes an empty temporary directory the working directory
// and returns it.
func inEmptyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// wantEmptyDir fails the test when dir holds anything.
func wantEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Errorf("the working directory holds %v, want nothing", names)
	}
}

// TestHelp: every command and subcommand answers help on stdout with its
// usage and exit 0, and does nothing else: with a configuration that does
// not load, it still answers, and the working directory stays empty.
func TestHelp(t *testing.T) {
	envs := map[string]map[string]string{
		"data dir unset":    {},
		"relative data dir": {"RECORDHUB_DATA_DIR": "data"},
		"bad configuration": {"RECORDHUB_DATA_DIR": "data", "RECORDHUB_DEFAULT_RATE_LIMIT": "0", "DATABASE_URL": "postgres://127.0.0.1:1/none"},
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: recordhub COMMAND"},
		{[]string{"--help"}, "usage: recordhub COMMAND"},
		{[]string{"-h"}, "usage: recordhub COMMAND"},
		{[]string{"help"}, "usage: recordhub COMMAND"},
		{[]string{"serve", "-h"}, "usage: recordhub serve"},
		{[]string{"serve", "--help"}, "usage: recordhub serve"},
		{[]string{"serve", "--role", "api", "--help"}, "usage: recordhub serve"},
		{[]string{"migrate", "--help"}, "usage: recordhub migrate"},
		{[]string{"migrate", "-h"}, "usage: recordhub migrate"},
		{[]string{"tenant", "--help"}, "usage: recordhub tenant COMMAND"},
		{[]string{"tenant", "-h"}, "usage: recordhub tenant COMMAND"},
		{[]string{"tenant", "help"}, "usage: recordhub tenant COMMAND"},
		{[]string{"tenant", "create", "--help"}, "usage: recordhub tenant create NAME"},
		{[]string{"tenant", "create", "acme", "--json", "-h"}, "usage: recordhub tenant create NAME"},
		{[]string{"tenant", "list", "-h"}, "usage: recordhub tenant list"},
		{[]string{"tenant", "list", "--help"}, "usage: recordhub tenant list"},
		{[]string{"tenant", "create-key", "--help"}, "usage: recordhub tenant create-key TENANT"},
		{[]string{"tenant", "create-key", "default", "--admin", "--help"}, "usage: recordhub tenant create-key TENANT"},
		{[]string{"tenant", "set-ai-key", "--help"}, "usage: recordhub tenant set-ai-key TENANT"},
		{[]string{"tenant", "set-ai-key", "default", "-h"}, "usage: recordhub tenant set-ai-key TENANT"},
		{[]string{"webhooks", "--help"}, "usage: recordhub webhooks COMMAND"},
		{[]string{"webhooks", "-h"}, "usage: recordhub webhooks COMMAND"},
		{[]string{"webhooks", "help"}, "usage: recordhub webhooks COMMAND"},
		{[]string{"webhooks", "recover", "--help"}, "usage: recordhub webhooks recover"},
		{[]string{"webhooks", "recover", "whe_1", "--since", "2h", "-h"}, "usage: recordhub webhooks recover"},
		{[]string{"webhooks", "resync", "--help"}, "usage: recordhub webhooks resync"},
		{[]string{"webhooks", "resync", "whe_1", "--wait", "-h"}, "usage: recordhub webhooks resync"},
		{[]string{"webhooks", "listen", "--help"}, "usage: recordhub webhooks listen"},
		{[]string{"webhooks", "listen", "--port", "0", "-h"}, "usage: recordhub webhooks listen"},
		{[]string{"records", "--help"}, "usage: recordhub records COMMAND"},
		{[]string{"records", "follow", "--help"}, "usage: recordhub records follow MODULE"},
		{[]string{"records", "follow", "orders", "--after", "latest", "-h"}, "usage: recordhub records follow MODULE"},
		{[]string{"temporal", "--help"}, "usage: recordhub temporal COMMAND"},
		{[]string{"temporal", "trim-visibility", "-h"}, "usage: recordhub temporal trim-visibility"},
		{[]string{"healthcheck", "--help"}, "usage: recordhub healthcheck URL"},
		{[]string{"healthcheck", "-h"}, "usage: recordhub healthcheck URL"},
		{[]string{"help", "tenant", "list"}, "usage: recordhub tenant list"},
	} {
		for name, env := range envs {
			t.Run(strings.Join(append(c.args, "/"+name), " "), func(t *testing.T) {
				dir := inEmptyDir(t)
				lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
				var stdout, stderr bytes.Buffer
				err := runCommand(context.Background(), c.args, lookup, unreadable{t}, &stdout, &stderr)
				if err != nil {
					t.Errorf("recordhub %v: %v, want exit 0", c.args, err)
				}
				if !strings.HasPrefix(stdout.String(), c.want) {
					t.Errorf("recordhub %v printed %q, want %q first", c.args, stdout.String(), c.want)
				}
				if stderr.Len() > 0 {
					t.Errorf("recordhub %v wrote %q to stderr, want nothing", c.args, stderr.String())
				}
				wantEmptyDir(t, dir)
			})
		}
	}
}

// TestUsageListsEveryCommand: recordhub --help names every command with
// its arguments, and the help of a group every command of the group.
func TestUsageListsEveryCommand(t *testing.T) {
	var (
		tenants = []string{
			"recordhub tenant create NAME [--json]",
			"recordhub tenant list [--json]",
			"recordhub tenant create-key TENANT [--admin] [--name N] [--json]",
			"recordhub tenant set-ai-key TENANT",
		}
		webhooks = []string{
			"recordhub webhooks recover ENDPOINT_ID --since",
			"recordhub webhooks listen [--port N] [--secret S] [--status CODE]",
		}
		records  = []string{"recordhub records follow MODULE [--after CURSOR|latest]"}
		temporal = []string{"recordhub temporal trim-visibility"}
		all      = append(append(append(append([]string{"recordhub serve [--role all|api|worker]", "recordhub migrate", "recordhub healthcheck URL"}, tenants...), webhooks...), records...), temporal...)
	)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, all},
		{[]string{"tenant", "--help"}, tenants},
		{[]string{"webhooks", "--help"}, webhooks},
		{[]string{"records", "--help"}, records},
		{[]string{"temporal", "--help"}, temporal},
	} {
		var stdout bytes.Buffer
		if err := runCommand(context.Background(), c.args, func(string) (string, bool) { return "", false }, nil, &stdout, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, want := range c.want {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("recordhub %v lacks %q:\n%s", c.args, want, stdout.String())
			}
		}
	}
}

// TestUnknownCommands: a command line that names no command exits non-zero
// with the usage on stderr, and does nothing.
func TestUnknownCommands(t *testing.T) {
	for _, c := range []struct {
		args      []string
		wantUsage string
	}{
		{[]string{"frob"}, "usage: recordhub COMMAND"},
		{[]string{"--verbose"}, "usage: recordhub COMMAND"},
		{[]string{"tenant"}, "usage: recordhub tenant COMMAND"},
		{[]string{"temporal"}, "usage: recordhub temporal COMMAND"},
		{[]string{"temporal", "trim"}, "usage: recordhub temporal COMMAND"},
		{[]string{"tenant", "delete", "acme"}, "usage: recordhub tenant COMMAND"},
		{[]string{"tenant", "list", "--all"}, "usage: recordhub tenant list"},
		{[]string{"tenant", "list", "acme"}, "usage: recordhub tenant list"},
		{[]string{"tenant", "create"}, "usage: recordhub tenant create NAME"},
		{[]string{"tenant", "create", "a", "b"}, "usage: recordhub tenant create NAME"},
		{[]string{"tenant", "set-ai-key"}, "usage: recordhub tenant set-ai-key TENANT"},
		{[]string{"webhooks", "frob"}, "usage: recordhub webhooks"},
		{[]string{"records"}, "usage: recordhub records follow"},
		{[]string{"records", "frob"}, "usage: recordhub records follow"},
		{[]string{"records", "follow"}, "usage: recordhub records follow"},
		{[]string{"records", "follow", "--bogus", "orders"}, "usage: recordhub records follow"},
		{[]string{"serve", "--bogus"}, "usage: recordhub serve"},
		{[]string{"serve", "now"}, "usage: recordhub serve"},
		{[]string{"migrate", "up"}, "usage: recordhub migrate"},
		{[]string{"healthcheck"}, "usage: recordhub healthcheck URL"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			dir := inEmptyDir(t)
			var stdout, stderr bytes.Buffer
			err := runCommand(context.Background(), c.args, func(string) (string, bool) { return "", false }, unreadable{t}, &stdout, &stderr)
			if err == nil {
				t.Errorf("recordhub %v succeeded, want an error", c.args)
			}
			if !strings.Contains(stderr.String(), c.wantUsage) {
				t.Errorf("recordhub %v: stderr %q, want %q in it", c.args, stderr.String(), c.wantUsage)
			}
			if stdout.Len() > 0 {
				t.Errorf("recordhub %v printed %q to stdout", c.args, stdout.String())
			}
			wantEmptyDir(t, dir)
		})
	}
}

// TestTenantCommandsNeedADatabase: run where no database is, the tenant
// commands refuse, naming where they looked and how to point them at the
// server's, and create nothing.
func TestTenantCommandsNeedADatabase(t *testing.T) {
	for _, args := range [][]string{
		{"tenant", "create", "acme"},
		{"tenant", "list"},
		{"tenant", "create-key", "default", "--admin"},
		{"tenant", "set-ai-key", "default"},
	} {
		for _, dataDir := range []struct{ env, path string }{
			{"", "data/recordhub.db"},
			{"data", "data/recordhub.db"},
			{"elsewhere/data/", "elsewhere/data/recordhub.db"},
		} {
			t.Run(strings.Join(append(args, "/"+dataDir.env), " "), func(t *testing.T) {
				dir := inEmptyDir(t)
				env := map[string]string{}
				if dataDir.env != "" {
					env["RECORDHUB_DATA_DIR"] = dataDir.env
				}
				lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
				var stdout bytes.Buffer
				err := runCommand(context.Background(), args, lookup, unreadable{t}, &stdout, io.Discard)
				path := dataDir.path
				if err == nil {
					t.Fatalf("recordhub %v succeeded without a database", args)
				}
				for _, want := range []string{"no database at " + path, "RECORDHUB_DATA_DIR", "DATABASE_URL"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("recordhub %v: %q, want %q in it", args, err, want)
					}
				}
				if stdout.Len() > 0 {
					t.Errorf("recordhub %v printed %q", args, stdout.String())
				}
				wantEmptyDir(t, dir)
			})
		}
	}

	// A database whose secret key is elsewhere (the server's
	// RECORDHUB_SECRET_KEY): no new key is made to seal with.
	dir := inEmptyDir(t)
	secret := map[string]string{"RECORDHUB_SECRET_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	if err := runCommand(context.Background(), []string{"migrate"}, func(k string) (string, bool) { v, ok := secret[k]; return v, ok }, nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	err := runCommand(context.Background(), []string{"tenant", "create", "acme"}, func(string) (string, bool) { return "", false }, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "RECORDHUB_SECRET_KEY") {
		t.Errorf("tenant create without the secret key: %v, want a refusal naming RECORDHUB_SECRET_KEY", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "secret.key")); err == nil {
		t.Error("tenant create wrote a secret key")
	}
	if err := runCommand(context.Background(), []string{"tenant", "create", "acme"}, func(k string) (string, bool) { v, ok := secret[k]; return v, ok }, nil, io.Discard, io.Discard); err != nil {
		t.Errorf("tenant create with the secret key: %v", err)
	}
}

// TestTenantNames: tenant list shows every tenant; the commands that take
// a tenant take its id or a name only it has; a second tenant of a name is
// not made.
func TestTenantNames(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, d)
			env := map[string]string{"RECORDHUB_DATA_DIR": cfg.DataDir, "DATABASE_URL": cfg.DatabaseURL}
			lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
			ctx := context.Background()
			cli := func(stdin string, args ...string) (string, error) {
				t.Helper()
				var out bytes.Buffer
				err := runCommand(ctx, args, lookup, strings.NewReader(stdin), &out, io.Discard)
				return out.String(), err
			}
			if _, err := cli("", "migrate"); err != nil {
				t.Fatal(err)
			}
			store, err := openStore(ctx, cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()

			out, err := cli("", "tenant", "list", "--json")
			if err != nil || strings.TrimSpace(out) != "[]" {
				t.Errorf("tenant list --json with no tenant: %q (%v), want []", out, err)
			}
			out, err = cli("", "tenant", "create", "acme", "--json")
			if err != nil {
				t.Fatal(err)
			}
			var acme struct {
				TenantID string `json:"tenant_id"`
			}
			if err := json.Unmarshal([]byte(out), &acme); err != nil {
				t.Fatal(err)
			}
			// Tenants that share a name, as databases made before the
			// command line refused them may hold.
			var twins []string
			for i := range 2 {
				tn, _, _, err := store.CreateTenant(ctx, fmt.Sprint("twin ", i), 600)
				if err != nil {
					t.Fatal(err)
				}
				databaseOf(cfg).NameTenant(t, tn.ID, "twin")
				twins = append(twins, tn.ID)
			}

			// A second acme is refused, naming the first and the way to
			// another admin key of it.
			_, err = cli("", "tenant", "create", "acme")
			for _, want := range []string{acme.TenantID, "recordhub tenant create-key acme --admin"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("a second tenant create acme: %v, want an error with %q", err, want)
				}
			}

			type row struct {
				ID        string    `json:"id"`
				Name      string    `json:"name"`
				CreatedAt time.Time `json:"created_at"`
			}
			tenants, err := store.ListTenants(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var want []row
			for _, tn := range tenants {
				want = append(want, row{tn.ID, tn.Name, tn.CreatedAt.UTC()})
			}
			if len(want) != 3 {
				t.Fatalf("%d tenants in the store, want 3", len(want))
			}
			out, err = cli("", "tenant", "list", "--json")
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("tenant list --json printed %q: %v", out, err)
			}
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("tenant list --json (-got +want):\n%s", diff)
			}
			out, err = cli("", "tenant", "list")
			if err != nil {
				t.Fatal(err)
			}
			table := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if len(table) != 4 || strings.Join(strings.Fields(table[0]), " ") != "ID NAME CREATED" {
				t.Fatalf("tenant list printed %q, want a header and 3 rows", out)
			}
			for i, w := range want {
				if gotRow, wantRow := strings.Fields(table[i+1]), []string{w.ID, w.Name, w.CreatedAt.Format(time.RFC3339)}; !cmp.Equal(gotRow, wantRow) {
					t.Errorf("row %d: %q, want %q", i+1, gotRow, wantRow)
				}
			}

			for _, c := range []struct {
				ref, wantTenant string
				wantErr         []string
			}{
				{ref: "acme", wantTenant: acme.TenantID},
				{ref: acme.TenantID, wantTenant: acme.TenantID},
				{ref: twins[1], wantTenant: twins[1]},
				{ref: "twin", wantErr: twins},
				{ref: "nobody", wantErr: []string{`"nobody"`}},
			} {
				out, err := cli("", "tenant", "create-key", c.ref, "--json")
				var minted struct {
					Key string `json:"key"`
				}
				if c.wantErr == nil {
					if err != nil {
						t.Fatalf("create-key %s: %v", c.ref, err)
					}
					if err := json.Unmarshal([]byte(out), &minted); err != nil {
						t.Fatal(err)
					}
					if got := mustTenant(t, store, minted.Key); got != c.wantTenant {
						t.Errorf("create-key %s made a key of %s, want %s", c.ref, got, c.wantTenant)
					}
				} else if err == nil || out != "" {
					t.Errorf("create-key %s: %q, %v; want a refusal", c.ref, out, err)
				}
				for _, w := range c.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("create-key %s: %v, want %q in it", c.ref, err, w)
					}
				}

				aiKey := "sk-" + c.ref
				_, err = cli(aiKey, "tenant", "set-ai-key", c.ref)
				if c.wantErr != nil {
					if err == nil {
						t.Errorf("set-ai-key %s succeeded, want a refusal", c.ref)
					}
					continue
				}
				if err != nil {
					t.Fatalf("set-ai-key %s: %v", c.ref, err)
				}
				if got := storedAIKey(t, cfg, c.wantTenant); got != aiKey {
					t.Errorf("after set-ai-key %s the AI key of %s is %q, want %q", c.ref, c.wantTenant, got, aiKey)
				}
			}
			if got := storedAIKey(t, cfg, twins[0]); got != "" {
				t.Errorf("the first twin's AI key %q, want none", got)
			}
			if ts, err := store.ListTenants(ctx); err != nil || len(ts) != 3 {
				t.Errorf("%d tenants at the end (%v), want 3", len(ts), err)
			}
		})
	}
}

// TestFailedFirstStartPrintsNoKey: a first start that fails prints no
// admin key and keeps none, so the next start that succeeds prints it.
func TestFailedFirstStartPrintsNoKey(t *testing.T) {
	skipShort(t)
	cfg := testConfig(t, models.SQLite)
	for _, c := range []struct {
		name string
		hold func(cfg *Config, addr string)
	}{
		{"the Temporal Web UI's port is taken", func(cfg *Config, addr string) { cfg.TemporalUIAddr = addr }},
		{"the API's port is taken", func(cfg *Config, addr string) { cfg.HTTPAddr = addr }},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			failing := cfg
			c.hold(&failing, l.Addr().String())
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out syncBuffer
			err = run(ctx, failing, Env{Stdout: &out, Stderr: io.Discard})
			if err == nil || !strings.Contains(err.Error(), l.Addr().String()) {
				t.Errorf("start with %s taken: %v, want an error naming it", l.Addr(), err)
			}
			if strings.Contains(out.String(), "rh_") {
				t.Errorf("a failed start printed a key: %q", out.String())
			}
		})
	}

	var out syncBuffer
	base, stop := startService(t, cfg, &out)
	var key string
	for _, f := range strings.Fields(out.String()) {
		if strings.HasPrefix(f, "rh_") {
			key = f
		}
	}
	if key == "" {
		t.Fatalf("the start after the failed ones printed no admin key: %q", out.String())
	}
	if st, body := call(t, "GET", base+"/api/admin/keys", key, ""); st != 200 {
		t.Errorf("the printed key does not work: %d %v", st, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestUsageTable: every command of the table shows in recordhub --help and
// in its group's help, and answers --help with a usage of its own that
// starts with the same words.
func TestUsageTable(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		var stdout bytes.Buffer
		if err := runCommand(context.Background(), args, func(string) (string, bool) { return "", false }, nil, &stdout, io.Discard); err != nil {
			t.Fatalf("recordhub %v: %v", args, err)
		}
		return stdout.String()
	}
	top := help("--help")
	for _, c := range commands {
		if !strings.Contains(top, "  "+c.synopsis) {
			t.Errorf("recordhub --help lacks %q", c.synopsis)
		}
		if c.group != "" {
			if got := help(c.group, "--help"); !strings.Contains(got, "  "+c.synopsis) {
				t.Errorf("recordhub %s --help lacks %q", c.group, c.synopsis)
			}
		}
		// The command's words: up to its first argument or flag.
		var words []string
		for _, w := range strings.Fields(c.synopsis)[1:] {
			if strings.ToLower(w) != w || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "-") {
				break
			}
			words = append(words, w)
		}
		want := "usage: recordhub " + strings.Join(words, " ")
		if got := help(append(words, "--help")...); !strings.HasPrefix(got, want) {
			t.Errorf("recordhub %s --help starts %q, want %q", strings.Join(words, " "), firstLine(got), want)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
