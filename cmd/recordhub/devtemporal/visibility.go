package devtemporal

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/recordhub/recordhub/cmd/internal/visindex"
	_ "modernc.org/sqlite" // the driver Temporal's SQLite plugin uses too
)

// trimVisibilityIndexes drops the indexes of the visibility table at path
// that operators do not search by (visindex), on a new database and on one
// made by an earlier release alike. It runs before the server opens the
// file.
func trimVisibilityIndexes(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("open temporal database: %w", err)
	}
	defer db.Close()
	_, err = visindex.Trim(ctx, db, visindex.SQLite)
	return err
}
