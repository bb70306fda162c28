package models

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// outboxChannel is the PostgreSQL NOTIFY channel on which a process that
// committed outbox events wakes the dispatchers of other processes. The
// payload is empty: a notification only says "look at the outbox".
const outboxChannel = "recordhub_outbox"

// Bounds of the wait between the outbox listener's connection attempts.
const (
	listenMinBackoff = 100 * time.Millisecond
	listenMaxBackoff = 5 * time.Second
)

// startAnnouncer prepares, on PostgreSQL with Options.AnnounceEvents, the
// connection and goroutine that announce committed events on
// outboxChannel. The NOTIFY is not issued in the writing transaction:
// PostgreSQL holds one lock for the whole server (on "database 0") from a
// notifying transaction's pre-commit until its end, WAL flush included,
// which would serialise every event-writing commit. Here the writers'
// commits take no such lock; one goroutine sends one NOTIFY after commits,
// coalescing those that arrive while it sends, in a transaction of its own
// that does not wait for its WAL flush (the notification carries nothing
// to keep). The connection opens at the first announcement.
func (s *Store) startAnnouncer(opts Options) {
	if !opts.AnnounceEvents || s.dialect != Postgres {
		return
	}
	c := s.pgConfig.Copy()
	if c.RuntimeParams == nil {
		c.RuntimeParams = map[string]string{}
	}
	c.RuntimeParams["synchronous_commit"] = "off"
	s.announcer = stdlib.OpenDB(*c)
	s.announcer.SetMaxOpenConns(1)
	s.announcer.SetMaxIdleConns(1)
	s.announcer.SetConnMaxLifetime(30 * time.Minute)
	s.announce = make(chan struct{}, 1)
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		s.runAnnouncer(s.life, s.announcer)
	}()
}

// runAnnouncer sends one NOTIFY per signal until ctx ends. A failed
// NOTIFY is dropped: listeners' dispatchers still poll, and the next
// commit announces again.
func (s *Store) runAnnouncer(ctx context.Context, db *sql.DB) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.announce:
		}
		_, _ = db.ExecContext(ctx, "NOTIFY "+s.outboxChannel)
	}
}

// ListenEvents has this store's EventWake signal also when other
// processes commit events on the same PostgreSQL database (those whose
// store announces them: Options.AnnounceEvents). It listens on a
// connection of its own, outside the pools, until the store is closed,
// and reconnects after a failure, waking the dispatcher once it is back
// since events may have been committed meanwhile. Nothing may depend on a
// notification arriving: dispatchers keep polling. Calls after the first
// do nothing, as does the call on SQLite, where one process writes.
func (s *Store) ListenEvents(log *slog.Logger) {
	if s.dialect != Postgres {
		return
	}
	s.listenOnce.Do(func() {
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			s.runListener(s.life, log)
		}()
	})
}

// runListener keeps an outbox listener connected until ctx ends. It warns
// of a lost or refused connection once per outage; the further failed
// attempts of that outage are debug records.
func (s *Store) runListener(ctx context.Context, log *slog.Logger) {
	backoff := listenMinBackoff
	down := false
	connected := func() {
		if down {
			log.Info("outbox listener reconnected")
			down = false
		}
		backoff = listenMinBackoff
	}
	for {
		err := s.listenEvents(ctx, connected)
		if ctx.Err() != nil {
			return
		}
		if !down {
			log.Warn("outbox listener disconnected; the dispatcher polls until it is back", "error", err)
			down = true
		} else {
			log.Debug("outbox listener still disconnected", "error", err, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// listenEvents connects, listens on outboxChannel, and wakes the
// dispatcher on every notification until the connection fails or ctx
// ends.
func (s *Store) listenEvents(ctx context.Context, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pgConfig)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		// A dead connection must not hold Close: bound the goodbye.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+s.outboxChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	connected()
	// Events committed before LISTEN took effect were not announced to
	// this connection.
	s.wakeDispatcher()
	s.listenerPID.Store(conn.PgConn().PID())
	defer s.listenerPID.Store(0)
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		s.wakeDispatcher()
	}
}
