package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"gorm.io/gorm"
)

// A request that must change several things, or nothing (a batch of record
// operations, a write stored with its idempotency key), runs in one
// transaction that the store's writes join: Atomically puts it in the
// context, and every write made with that context runs in it instead of a
// transaction of its own.

type ambientKey struct{}

// ambient is the transaction that writes made with a context join.
type ambient struct {
	tx *gorm.DB
	// depth counts the nested calls of Atomically under way, which name
	// their savepoints by it.
	depth int
}

// ambientTx returns the transaction ctx's writes join, or nil.
func ambientTx(ctx context.Context) *gorm.DB {
	if a, ok := ctx.Value(ambientKey{}).(*ambient); ok {
		return a.tx
	}
	return nil
}

// InTransaction reports whether writes made with ctx join a transaction
// of Atomically's.
func InTransaction(ctx context.Context) bool { return ambientTx(ctx) != nil }

// errPanicked carries a panic out of the SQLite committer, which must not
// die of one: it is raised again in the caller's goroutine.
type errPanicked struct{ value any }

func (e errPanicked) Error() string { return fmt.Sprintf("panic in transaction: %v", e.value) }

// Atomically runs fn in one transaction: every write the store makes with
// the context fn is given joins it, and it commits when fn returns nil and
// rolls back when fn returns an error, which Atomically returns. Called
// with a context already in a transaction, fn joins that one, inside a
// savepoint: when fn fails, its own writes are undone and the outer
// transaction goes on, usable (on PostgreSQL a failed statement would
// otherwise abort it), for its caller to commit or not. So a batch that
// fails inside an idempotent write's transaction leaves nothing of itself
// whatever the write then stores.
//
// On SQLite fn runs on the goroutine that commits every write of the
// process, so fn must not wait on anything but the store (read a request's
// body before, not in fn), and must make its writes through the store with
// the context it is given: a write made with another context would wait
// for the transaction fn is in.
func (s *Store) Atomically(ctx context.Context, fn func(ctx context.Context) error) error {
	if a, ok := ctx.Value(ambientKey{}).(*ambient); ok {
		return a.nested(ctx, fn)
	}
	run := func(tx *gorm.DB) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = errPanicked{v}
			}
		}()
		return fn(context.WithValue(ctx, ambientKey{}, &ambient{tx: tx}))
	}
	err := s.write(ctx, run)
	if p, ok := errors.AsType[errPanicked](err); ok {
		panic(p.value)
	}
	if err == nil {
		// Writes in fn woke the dispatchers before the commit; they may
		// have looked too early.
		s.eventsWritten()
	}
	return err
}

// nested runs fn in a savepoint of a's transaction, undone when fn fails
// or panics.
func (a *ambient) nested(ctx context.Context, fn func(ctx context.Context) error) error {
	a.depth++
	defer func() { a.depth-- }()
	sp := "atomically_" + strconv.Itoa(a.depth)
	if err := a.tx.SavePoint(sp).Error; err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	undo := func() error {
		if err := a.tx.RollbackTo(sp).Error; err != nil {
			return fmt.Errorf("rollback to savepoint: %w", err)
		}
		return nil
	}
	panicked := true
	defer func() {
		if panicked {
			_ = undo()
		}
	}()
	err := fn(ctx)
	panicked = false
	if err != nil {
		return errors.Join(err, undo())
	}
	if err := a.tx.Exec("RELEASE SAVEPOINT " + sp).Error; err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// writer is the handle a single-statement write uses: the context's
// transaction when it is in one, else the write pool.
func (s *Store) writer(ctx context.Context) *gorm.DB {
	if tx := ambientTx(ctx); tx != nil {
		return tx
	}
	return s.w.WithContext(ctx)
}

// lockForChange takes, on PostgreSQL, a lock on each of the records ids
// that holds until tx ends; it must come before tx's first write. The
// change feed lists a module's events in the order of their transactions'
// ids (changes.go), and a transaction is given its id by its first write:
// when every transaction that changes a record takes the record's lock
// before that, a later change of a record always has the larger id, so
// the feed lists a record's changes in version order. The locks are
// advisory, taken in one order (no deadlock between batches), and cost
// nothing on SQLite, whose writers take turns.
func (s *Store) lockForChange(tx *gorm.DB, ids ...string) error {
	if s.dialect != Postgres || len(ids) == 0 {
		return nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	err := tx.Exec(`SELECT pg_advisory_xact_lock(k) FROM (
		SELECT DISTINCT hashtextextended(id, 0) AS k FROM unnest(CAST(? AS text[])) AS id) AS ks ORDER BY k`,
		pgTextArray(ids)).Error
	if err != nil {
		return fmt.Errorf("lock records: %w", err)
	}
	return nil
}

// LockForChange takes lockForChange's locks in ctx's transaction, which
// must not have written yet: a batch takes them for every record it
// changes before its first operation. Outside a transaction it does
// nothing, as a lock that ends with its statement holds nothing.
func (s *Store) LockForChange(ctx context.Context, ids ...string) error {
	tx := ambientTx(ctx)
	if tx == nil {
		return nil
	}
	return s.lockForChange(tx, ids...)
}
