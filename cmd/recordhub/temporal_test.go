package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestTemporalTrimVisibility: the command drops, in the PostgreSQL
// database TEMPORAL_VISIBILITY_DATABASE_URL names, the visibility indexes
// operators do not search by and prints them; run again, it drops
// nothing; without the variable it refuses and drops nothing.
func TestTemporalTrimVisibility(t *testing.T) {
	h := storetest.NewDB(t, models.Postgres)
	for _, s := range []string{
		`CREATE TABLE executions_visibility (namespace_id VARCHAR(64), run_id VARCHAR(64), workflow_id VARCHAR(255), history_length BIGINT, PRIMARY KEY (namespace_id, run_id))`,
		`CREATE INDEX by_workflow_id ON executions_visibility (namespace_id, workflow_id)`,
		`CREATE INDEX by_history_length ON executions_visibility (namespace_id, history_length)`,
	} {
		if _, err := h.SQL(t).Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	run := func(env map[string]string) (string, error) {
		var out bytes.Buffer
		err := runCommand(context.Background(), []string{"temporal", "trim-visibility"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil, &out, &out)
		return out.String(), err
	}
	if out, err := run(nil); err == nil || !strings.Contains(err.Error(), "TEMPORAL_VISIBILITY_DATABASE_URL") {
		t.Errorf("without the URL: %v (%q), want an error naming TEMPORAL_VISIBILITY_DATABASE_URL", err, out)
	}
	if n := len(h.Rows(t, `SELECT indexname FROM pg_indexes WHERE indexname = 'by_history_length'`)); n != 1 {
		t.Fatalf("by_history_length gone without a URL")
	}
	env := map[string]string{"TEMPORAL_VISIBILITY_DATABASE_URL": h.DSN}
	out, err := run(env)
	if err != nil || out != "dropped by_history_length\n" {
		t.Errorf("first run: %v, printed %q; want by_history_length dropped", err, out)
	}
	var left []string
	for _, r := range h.Rows(t, `SELECT indexname FROM pg_indexes WHERE tablename = 'executions_visibility' ORDER BY indexname`) {
		left = append(left, r["indexname"])
	}
	if strings.Join(left, " ") != "by_workflow_id executions_visibility_pkey" {
		t.Errorf("indexes left: %q, want by_workflow_id and the primary key", left)
	}
	if out, err := run(env); err != nil || !strings.HasPrefix(out, "no index to drop") {
		t.Errorf("second run: %v, printed %q; want nothing to drop", err, out)
	}
}
