package models

import (
	"context"
	"database/sql"
	"sync"
)

// maxWriterStmts bounds the statements kept prepared on SQLite's writer.
const maxWriterStmts = 64

// writerStmts are statements of the hot write paths prepared once on
// SQLite's one writer connection, by query. Prepared on every run, a
// statement of a hundred rows costs more than a tenth of what its rows
// do. The connection is held by the transaction of a group while a write
// runs, so a statement cannot be prepared where it is first wanted: it is
// asked for there, and the group committer prepares it between two
// groups (prepareWanted); until then the write runs it unprepared.
type writerStmts struct {
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool
}

// lookup returns query's prepared statement, or nil and asks for it.
func (w *writerStmts) lookup(query string) *sql.Stmt {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st := w.stmts[query]; st != nil {
		return st
	}
	if len(w.stmts)+len(w.wanted) < maxWriterStmts {
		if w.wanted == nil {
			w.wanted = map[string]bool{}
		}
		w.wanted[query] = true
	}
	return nil
}

// takeWanted returns the queries asked for since the last call.
func (w *writerStmts) takeWanted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for q := range w.wanted {
		out = append(out, q)
	}
	clear(w.wanted)
	return out
}

func (w *writerStmts) add(query string, st *sql.Stmt) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stmts == nil {
		w.stmts = map[string]*sql.Stmt{}
	}
	w.stmts[query] = st
}

// close closes the prepared statements.
func (w *writerStmts) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.stmts {
		st.Close()
	}
	clear(w.stmts)
}

// prepareWanted prepares the statements writes asked for, on the writer's
// connection, which no transaction holds between two groups. A statement
// that fails to prepare is asked for again by its next run, which runs it
// unprepared meanwhile.
func (s *Store) prepareWanted() {
	wanted := s.writerStmts.takeWanted()
	if len(wanted) == 0 {
		return
	}
	db, err := s.w.DB()
	if err != nil {
		return
	}
	for _, q := range wanted {
		if st, err := db.PrepareContext(context.Background(), q); err == nil {
			s.writerStmts.add(q, st)
		}
	}
}

// execWrite runs a statement of a write in tx, through its statement
// prepared on SQLite's writer once there is one (see writerStmts), else
// as exec does.
func (s *Store) execWrite(tx *gormDB, query string, args ...any) (sql.Result, error) {
	sqlTx, ok := tx.Statement.ConnPool.(*sql.Tx)
	if s.dialect != SQLite || !ok {
		return s.exec(tx, query, args...)
	}
	st := s.writerStmts.lookup(query)
	if st == nil {
		return s.exec(tx, query, args...)
	}
	ctx := tx.Statement.Context
	res, err := sqlTx.StmtContext(ctx, st).ExecContext(ctx, args...)
	s.observe(query)
	return res, err
}
