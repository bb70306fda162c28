package visindex_test

import (
	"slices"
	"testing"

	"github.com/recordhub/recordhub/cmd/internal/visindex"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestTrim: of a visibility table's indexes, Trim drops those Kept does
// not name and keeps the kept ones, the primary key and (on PostgreSQL) a
// unique index; another table's index is left alone; a second run drops
// nothing.
func TestTrim(t *testing.T) {
	for _, c := range []struct {
		name string
		db   models.Dialect
		vis  visindex.Dialect
	}{{"sqlite", models.SQLite, visindex.SQLite}, {"postgres", models.Postgres, visindex.Postgres}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			h := storetest.NewDB(t, c.db)
			db := h.SQL(t)
			stmts := []string{
				`CREATE TABLE executions_visibility (namespace_id VARCHAR(64), run_id VARCHAR(64), workflow_id VARCHAR(255),
					history_length BIGINT, keyword01 VARCHAR(255), PRIMARY KEY (namespace_id, run_id))`,
				`CREATE INDEX default_idx ON executions_visibility (namespace_id, run_id)`,
				`CREATE INDEX by_workflow_id ON executions_visibility (namespace_id, workflow_id)`,
				`CREATE INDEX by_keyword_01 ON executions_visibility (namespace_id, keyword01)`,
				`CREATE INDEX by_history_length ON executions_visibility (namespace_id, history_length)`,
				`CREATE INDEX "by ""quoted"" name" ON executions_visibility (history_length)`,
				`CREATE TABLE other (id VARCHAR(64), history_length BIGINT)`,
				`CREATE INDEX by_other_length ON other (history_length)`,
			}
			if c.vis == visindex.Postgres {
				stmts = append(stmts, `CREATE UNIQUE INDEX by_unique_workflow ON executions_visibility (namespace_id, workflow_id, run_id)`)
			}
			for _, s := range stmts {
				if _, err := db.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			dropped, err := visindex.Trim(ctx, db, c.vis)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(dropped)
			if want := []string{`by "quoted" name`, "by_history_length"}; !slices.Equal(dropped, want) {
				t.Errorf("dropped %q, want %q", dropped, want)
			}
			indexes := map[visindex.Dialect]string{
				visindex.SQLite:   `SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`,
				visindex.Postgres: `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname NOT LIKE '%pkey' ORDER BY indexname`,
			}[c.vis]
			var left []string
			for _, r := range h.Rows(t, indexes) {
				for _, v := range r {
					left = append(left, v)
				}
			}
			want := []string{"by_keyword_01", "by_other_length", "by_workflow_id", "default_idx"}
			if c.vis == visindex.Postgres {
				want = []string{"by_keyword_01", "by_other_length", "by_unique_workflow", "by_workflow_id", "default_idx"}
			}
			if !slices.Equal(left, want) {
				t.Errorf("indexes left %q, want %q", left, want)
			}
			if again, err := visindex.Trim(ctx, db, c.vis); err != nil || len(again) != 0 {
				t.Errorf("a second run dropped %q (%v), want nothing", again, err)
			}
		})
	}
}
