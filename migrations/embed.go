// Package migrations holds the versioned SQL schema of recordhub, one
// directory per database dialect, applied with goose.
package migrations

import "embed"

// Postgres holds the PostgreSQL migrations, under "postgres/".
//
//go:embed postgres/*.sql
var Postgres embed.FS

// SQLite holds the SQLite migrations, under "sqlite/".
//
//go:embed sqlite/*.sql
var SQLite embed.FS
