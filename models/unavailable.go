package models

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// IsUnavailable reports whether err says that the database cannot be
// reached now, rather than that it refused the statement: a call that
// failed so may succeed unchanged once the database is back, so callers
// are told to retry (ErrUnavailable) instead of being shown an internal
// error.
//
// Unavailable on PostgreSQL: a failed connection attempt (refused, timed
// out, DNS), a connection broken under a statement (unexpected EOF, a
// network error, pgx's closed connection), and the server's own answers of
// SQLSTATE class 08 (connection exception), 57P01/57P02/57P03 (shut down
// by an administrator or a crash, or not accepting connections yet) and
// 53300 (too many connections). On SQLite: SQLITE_BUSY and SQLITE_LOCKED
// (another process held the lock past the busy timeout), SQLITE_CANTOPEN,
// SQLITE_IOERR and SQLITE_FULL. Any other server or SQLite error (a
// constraint, a syntax error, a bad password) is not, and neither is a
// call its client cancelled; a deadline the server set on a database call
// that passed is (the database did not answer in time).
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	// The database's own answer decides, even inside a connection error:
	// a wrong password or a missing database is a fault to fix, not an
	// outage to wait out.
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgUnavailable(pgErr.Code)
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() & 0xff { // the primary code of an extended one
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL:
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	if errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// *net.OpError (refused, reset, broken pipe, i/o timeout), *net.DNSError.
	var netErr net.Error
	return errors.As(err, &netErr)
}

// pgUnavailable reports whether a PostgreSQL SQLSTATE says the server
// cannot serve connections now.
func pgUnavailable(code string) bool {
	switch code {
	case "57P01", // admin_shutdown
		"57P02", // crash_shutdown
		"57P03", // cannot_connect_now: starting up, shutting down, in recovery
		"53300": // too_many_connections
		return true
	}
	return strings.HasPrefix(code, "08") // connection_exception and its subclasses
}
