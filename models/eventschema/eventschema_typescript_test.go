package eventschema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/eventschema"
)

// typescriptDir holds the generated-types check: its npm packages
// (json-schema-to-typescript, typescript) and the program receiver.ts.
const typescriptDir = "testdata/typescript"

// TestTypeScriptReceiver: the document makes TypeScript types a receiver
// can use, as api/README.md (Typed payloads) shows. json-schema-to-
// typescript generates them from the module's document, tsc checks
// receiver.ts against them (a field typed wrongly, an event type missing
// or invented fails here), and the compiled receiver reads real bodies of
// every type. It skips when Node or the packages are missing, unless
// RECORDHUB_TEST_REQUIRE_NODE=1, and under -short.
func TestTypeScriptReceiver(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Node and the generated-types check's npm packages; skipped by -short")
	}
	npm, err := exec.LookPath("npm")
	if err == nil {
		_, err = os.Stat(filepath.Join(typescriptDir, "node_modules", "json-schema-to-typescript", "package.json"))
		if err != nil {
			err = fmt.Errorf("the npm packages are not installed (npm ci --prefix models/eventschema/%s): %w", typescriptDir, err)
		}
	}
	if err != nil {
		if os.Getenv("RECORDHUB_TEST_REQUIRE_NODE") == "1" {
			t.Fatalf("RECORDHUB_TEST_REQUIRE_NODE=1 but the generated types cannot be checked: %v", err)
		}
		t.Skipf("skipping the generated TypeScript types: %v", err)
	}

	m, bodies := eventBodies(t, models.SQLite)
	if err := os.WriteFile(filepath.Join(typescriptDir, "module.schema.json"), marshal(t, eventschema.For(m)), 0o644); err != nil {
		t.Fatal(err)
	}
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
	all := make([]json.RawMessage, len(bodies))
	for i, b := range bodies {
		all[i] = b
	}
	out := run("start", "BODIES="+string(marshal(t, all)))

	// What the receiver printed, in the order of eventBodies.
	want := []string{
		"record_snapshot Standing desk count=- size=m stage=paid v4",
		"record_created Desk count=3 size=s stage=new v1",
		"record_updated count,extra,review,stage,title",
		"status_change review null->open",
		"status_change stage new->paid",
		"record_updated review,size",
		"status_change review open->null",
		"custom_data_updated batch,source",
		"record_deleted Standing desk count=- size=m stage=paid v4",
		"endpoint_disabled gone",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(string(out)), "\n")); diff != "" {
		t.Errorf("what the typed receiver read (-want +got):\n%s", diff)
	}
}
