package models

import (
	"context"
	"fmt"
	"strconv"

	"gorm.io/gorm"
)

// SQLite commits are the cost of its writes: every commit appends to the
// WAL with its own system calls. Writes on SQLite therefore go through one
// goroutine that runs whatever is waiting in a single transaction, each
// write inside a savepoint of its own, so that one write's failure undoes
// only that write. Concurrent writers share a commit; a lone writer waits
// for nobody. PostgreSQL groups commits itself.

// maxGroup bounds the writes sharing one commit.
const maxGroup = 64

type writeJob struct {
	ctx  context.Context
	fn   func(tx *gorm.DB) error
	done chan error
}

// write runs fn in a transaction: its own on PostgreSQL, a shared one on
// SQLite, ctx's when it is in one of Atomically's. fn must use only tx,
// never the store's pools for writes.
func (s *Store) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if tx := ambientTx(ctx); tx != nil {
		return fn(tx)
	}
	if s.writes == nil {
		s.observe("BEGIN")
		err := s.w.WithContext(ctx).Transaction(fn)
		s.observeEnd(err)
		return err
	}
	j := writeJob{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case s.writes <- j:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-j.done
}

// writeOne runs fn, which must run exactly one statement, as write does,
// but on PostgreSQL without BEGIN and COMMIT around it: a single statement
// is atomic by itself, and the two round trips cost as much as it does.
func (s *Store) writeOne(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.writes == nil || InTransaction(ctx) {
		return fn(s.writer(ctx))
	}
	return s.write(ctx, fn)
}

// runWrites commits waiting writes in groups until the store closes.
func (s *Store) runWrites() {
	defer close(s.writesDone)
	for j := range s.writes {
		group := []writeJob{j}
	collect:
		for len(group) < maxGroup {
			select {
			case next, ok := <-s.writes:
				if !ok {
					break collect
				}
				group = append(group, next)
			default:
				break collect
			}
		}
		s.commitGroup(group)
		s.prepareWanted()
	}
}

func (s *Store) commitGroup(group []writeJob) {
	errs := make([]error, len(group))
	// Statements run without the callers' cancellation: an interrupted
	// statement would roll back the whole shared transaction.
	tx := s.w.WithContext(context.Background()).Begin()
	if tx.Error != nil {
		for _, j := range group {
			j.done <- fmt.Errorf("begin: %w", tx.Error)
		}
		return
	}
	s.observe("BEGIN")
	for i, j := range group {
		if err := j.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		sp := "w" + strconv.Itoa(i)
		if err := tx.SavePoint(sp).Error; err != nil {
			errs[i] = fmt.Errorf("savepoint: %w", err)
			continue
		}
		if err := j.fn(withTrace(j.ctx, tx)); err != nil {
			errs[i] = err
			if rerr := tx.RollbackTo(sp).Error; rerr != nil {
				// The transaction is unusable: fail every write of the group.
				tx.Rollback()
				s.observe("ROLLBACK")
				for k, j := range group {
					if k < i || errs[k] == nil {
						errs[k] = fmt.Errorf("rollback to savepoint: %w", rerr)
					}
					j.done <- errs[k]
				}
				return
			}
			continue
		}
		tx.Exec("RELEASE " + sp)
	}
	err := tx.Commit().Error
	s.observe("COMMIT")
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("commit: %w", err)
			}
		}
	}
	for i, j := range group {
		j.done <- errs[i]
	}
}
