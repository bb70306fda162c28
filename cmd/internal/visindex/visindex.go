// Package visindex trims Temporal's visibility table to the indexes
// recordhub's operators search by.
//
// Every delivery is a workflow, and every workflow writes its visibility
// row (the row the Web UI lists and searches) when it starts and again
// when it closes. Temporal's schemas give that table an index for every
// column it might be searched by (58 on SQLite, 73 on PostgreSQL, some of
// them GIN indexes): a row written is a b-tree insert in each, and a row
// replaced, a new version in each. Those writes are the largest part of
// what a delivery costs the visibility store (the bench README has the
// figures). Trim keeps the indexes of what operators search by: the
// default listing (newest first), start time, workflow id and type,
// status, task queue, and the Keyword attributes, among them recordhub's
// own (tenant, endpoint, module, record, event type). The rest are
// dropped: a search by such a column still answers, by reading the
// namespace's rows instead of an index. Primary keys and unique indexes
// stay, and so do the full-text tables of SQLite's schema.
package visindex

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Kept are the indexes of executions_visibility that Trim keeps, by the
// names both of Temporal's SQL schemas give them.
var Kept = []string{
	"default_idx", "by_execution_time", "by_workflow_id", "by_workflow_type", "by_status", "by_task_queue",
	"by_keyword_01", "by_keyword_02", "by_keyword_03", "by_keyword_04", "by_keyword_05",
	"by_keyword_06", "by_keyword_07", "by_keyword_08", "by_keyword_09", "by_keyword_10",
}

// Dialect is the SQL of the visibility store.
type Dialect int

const (
	SQLite Dialect = iota
	Postgres
)

// listQuery lists the droppable indexes of the visibility table: on
// PostgreSQL neither the primary key nor a unique index, and only the
// table the connection's search path finds.
var listQuery = map[Dialect]string{
	SQLite: `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL`,
	Postgres: `SELECT i.relname FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_class t ON t.oid = x.indrelid
		WHERE t.relname = 'executions_visibility' AND pg_table_is_visible(t.oid)
		  AND NOT x.indisprimary AND NOT x.indisunique`,
}

// Trim drops the indexes of db's visibility table that Kept does not
// name, and returns their names. It is safe to run again, and on a
// database made by an earlier Temporal release.
func Trim(ctx context.Context, db *sql.DB, d Dialect) ([]string, error) {
	rows, err := db.QueryContext(ctx, listQuery[d])
	if err != nil {
		return nil, fmt.Errorf("list visibility indexes: %w", err)
	}
	var drop []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list visibility indexes: %w", err)
		}
		if !slices.Contains(Kept, name) {
			drop = append(drop, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list visibility indexes: %w", err)
	}
	for _, name := range drop {
		if _, err := db.ExecContext(ctx, `DROP INDEX IF EXISTS `+quoteIdent(name)); err != nil {
			return nil, fmt.Errorf("drop visibility index %s: %w", name, err)
		}
	}
	return drop, nil
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
