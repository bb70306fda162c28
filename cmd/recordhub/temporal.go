package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx" driver

	"github.com/recordhub/recordhub/cmd/internal/visindex"
)

const temporalTrimUsage = `usage: recordhub temporal trim-visibility

Drops the indexes of Temporal's visibility table (executions_visibility) that recordhub's
operators do not search by, in the PostgreSQL database TEMPORAL_VISIBILITY_DATABASE_URL names,
and prints their names. It keeps the default listing, start time, workflow id and type, status,
task queue and the Keyword attributes, recordhub's among them: every search the Temporal UI makes
of deliveries still uses an index, and a search by another column still answers, by reading the
namespace's rows. Run it after creating or upgrading the visibility schema; it is safe to run
again. An upgrade step that drops an index by name fails on a trimmed table: create that index
again from Temporal's schema.sql first. The embedded Temporal server trims its own table.`

// temporalCommand runs `recordhub temporal …`.
func temporalCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	groupUsage := usageText("temporal", "usage: recordhub temporal COMMAND", "")
	if len(args) == 0 {
		fmt.Fprint(stderr, groupUsage)
		return errors.New("no temporal command given")
	}
	if args[0] == "help" || isHelpArg(args[0]) {
		fmt.Fprint(stdout, groupUsage)
		return errHelpShown
	}
	if args[0] != "trim-visibility" {
		fmt.Fprint(stderr, groupUsage)
		return fmt.Errorf("unknown temporal command %q", args[0])
	}
	fs := flag.NewFlagSet("temporal trim-visibility", flag.ContinueOnError)
	rest, err := parseArgs(fs, temporalTrimUsage, args[1:], stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError(stderr, fs, temporalTrimUsage, fmt.Errorf("temporal trim-visibility takes no arguments, got %q", rest))
	}
	url, _ := lookupEnv("TEMPORAL_VISIBILITY_DATABASE_URL")
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return errors.New("temporal trim-visibility: set TEMPORAL_VISIBILITY_DATABASE_URL to the postgres:// URL of Temporal's visibility database")
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		return fmt.Errorf("temporal trim-visibility: %w", err)
	}
	defer db.Close()
	dropped, err := visindex.Trim(ctx, db, visindex.Postgres)
	if err != nil {
		return fmt.Errorf("temporal trim-visibility: %w", err)
	}
	if len(dropped) == 0 {
		fmt.Fprintln(stdout, "no index to drop: the visibility table has only the kept ones")
	}
	for _, name := range dropped {
		fmt.Fprintf(stdout, "dropped %s\n", name)
	}
	return nil
}
