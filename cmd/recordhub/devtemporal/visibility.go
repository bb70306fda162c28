package devtemporal

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	_ "modernc.org/sqlite" // the driver Temporal's SQLite plugin uses too
)

// Every delivery is a workflow, and every workflow writes its visibility
// row (the row the Web UI lists and searches) when it starts and again
// when it closes. Temporal's SQLite schema gives that table an index for
// every column it might be searched by: 58, for each of which a row
// written is a b-tree insert and a row replaced a delete and an insert:
// during a burst of deliveries, the largest share of the process's CPU
// (the bench README has the profile). The dev server keeps the indexes of what its operators
// search by: the default listing (newest first), start time, workflow id
// and type, status, task queue, and the Keyword attributes, among them
// recordhub's own (tenant, endpoint, module, record, event type). The rest
// are dropped: a search by such a column still answers, by reading the
// namespace's rows instead of an index. The full-text tables of Text and
// KeywordList attributes (TemporalChangeVersion among them) are left as
// they are.

// keptVisibilityIndexes are the indexes of executions_visibility that
// trimVisibilityIndexes keeps.
var keptVisibilityIndexes = map[string]bool{
	"default_idx":       true,
	"by_execution_time": true,
	"by_workflow_id":    true,
	"by_workflow_type":  true,
	"by_status":         true,
	"by_task_queue":     true,
	"by_keyword_01":     true, "by_keyword_02": true, "by_keyword_03": true, "by_keyword_04": true, "by_keyword_05": true,
	"by_keyword_06": true, "by_keyword_07": true, "by_keyword_08": true, "by_keyword_09": true, "by_keyword_10": true,
}

// trimVisibilityIndexes drops the indexes of the visibility table at path
// that keptVisibilityIndexes does not name, on a new database and on one
// made by an earlier release alike. It runs before the server opens the
// file.
func trimVisibilityIndexes(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("open temporal database: %w", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("list visibility indexes: %w", err)
	}
	var drop []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("list visibility indexes: %w", err)
		}
		if !keptVisibilityIndexes[name] {
			drop = append(drop, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list visibility indexes: %w", err)
	}
	for _, name := range drop {
		if _, err := db.ExecContext(ctx, `DROP INDEX IF EXISTS "`+strings.ReplaceAll(name, `"`, `""`)+`"`); err != nil {
			return fmt.Errorf("drop visibility index %s: %w", name, err)
		}
	}
	return nil
}
