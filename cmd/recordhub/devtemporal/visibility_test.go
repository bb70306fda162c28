package devtemporal

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/recordhub/recordhub/cmd/internal/visindex"
	"github.com/recordhub/recordhub/models/storetest"
)

// visibilityIndexes lists the indexes of the visibility table at path.
func visibilityIndexes(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestVisibilityIndexesTrimmed: a database made by an earlier release,
// with every index of Temporal's schema, keeps only the kept ones once the
// server has started on it; the namespace's workflows still list.
func TestVisibilityIndexesTrimmed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "temporal.db")
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := prepareDatabase(sqliteConfig(abs), testNamespace, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	before := visibilityIndexes(t, abs)
	for _, name := range visindex.Kept {
		if !slices.Contains(before, name) {
			t.Fatalf("Temporal's schema has no index %s (it has %v): visindex.Kept names one that is gone", name, before)
		}
	}
	if len(before) <= len(visindex.Kept) {
		t.Fatalf("Temporal's schema has %d visibility indexes, want more than the %d kept", len(before), len(visindex.Kept))
	}

	s := startServer(t, Config{DataDir: dir, Namespace: testNamespace, Logger: testLogger()})
	want := slices.Sorted(slices.Values(visindex.Kept))
	if d := cmp.Diff(visibilityIndexes(t, abs), want); d != "" {
		t.Errorf("visibility indexes after start (-got +want):\n%s", d)
	}
	c, _ := dial(t, s)
	runWorker(t, c, "trimmed")
	wantResult(t, greet(t, c, "trimmed-1", "trimmed", "you"), "hello, you")
	for _, q := range []string{"", `WorkflowId = "trimmed-1"`, `WorkflowType = "GreetWorkflow"`, `ExecutionStatus = "Completed"`, `TaskQueue = "trimmed"`} {
		storetest.Eventually(t, 30*time.Second, "the workflow listed by "+q, func() bool {
			resp, err := c.ListWorkflow(t.Context(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: testNamespace, Query: q})
			if err != nil {
				t.Fatalf("list %q: %v", q, err)
			}
			for _, e := range resp.GetExecutions() {
				if e.GetExecution().GetWorkflowId() == "trimmed-1" {
					return true
				}
			}
			return false
		})
	}
}
