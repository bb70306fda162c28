package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// typescriptDir holds the TypeScript client check: its npm packages
// (openapi-typescript, openapi-fetch, typescript) and the program
// client.ts.
const typescriptDir = "typescript"

// TestTypeScriptClient: api/openapi.yaml alone makes a working TypeScript
// client. openapi-typescript generates the types from the document, tsc
// type-checks client.ts against them (a request member the document gets
// wrong fails here), and the compiled program runs against the real API,
// creating a module and a record, reading and listing it, and reading a
// missing one (a route or answer the document gets wrong fails here). It
// skips when Node or the packages are missing, unless
// RECORDHUB_TEST_REQUIRE_NODE=1, and under -short.
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Node and the TypeScript client's npm packages; skipped by -short")
	}
	npm, err := exec.LookPath("npm")
	if err == nil {
		_, err = os.Stat(filepath.Join(typescriptDir, "node_modules", "openapi-typescript", "package.json"))
		if err != nil {
			err = fmt.Errorf("the npm packages are not installed (npm ci --prefix api/client/%s): %w", typescriptDir, err)
		}
	}
	if err != nil {
		if os.Getenv("RECORDHUB_TEST_REQUIRE_NODE") == "1" {
			t.Fatalf("RECORDHUB_TEST_REQUIRE_NODE=1 but the TypeScript client cannot be built: %v", err)
		}
		t.Skipf("skipping the TypeScript client: %v", err)
	}

	store := storetest.Open(t, models.SQLite)
	_, _, key, err := store.CreateTenant(context.Background(), "typescript", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler(store))
	t.Cleanup(srv.Close)

	run := func(script string, env ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), npm, "run", "--silent", script)
		cmd.Dir = typescriptDir
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("npm run %s: %v\n%s%s", script, err, out, stderr.Bytes())
		}
		return out
	}
	run("generate")
	run("build")
	out := run("start", "RECORDHUB_API_URL="+srv.URL, "RECORDHUB_ADMIN_KEY="+key)

	var got []map[string]any
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("client.ts printed %q, not a JSON line: %v", line, err)
		}
		got = append(got, v)
	}
	want := []map[string]any{
		{"module": "orders", "record": map[string]any{"title": "Desk", "amount": float64(120)}, "version": float64(1)},
		{"listed": float64(1), "total": float64(1)},
		{"status": float64(404), "error": "not_found"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the TypeScript client got (-want +got):\n%s", diff)
	}
}
