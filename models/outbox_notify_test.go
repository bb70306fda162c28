package models_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// wakeBound bounds the wait for a wake-up that must come; reaching it is
// the failure, not a measure.
const wakeBound = 10 * time.Second

// replicaAndWorker opens, on one PostgreSQL database, an API replica's
// store that announces its events and a worker's store that listens, on
// a channel of the test's own, and returns them with a module to write
// records in once the worker listens.
func replicaAndWorker(t *testing.T) (*storetest.DB, *models.Store, *models.Store, *models.Module) {
	t.Helper()
	db := storetest.NewDB(t, models.Postgres)
	b := make([]byte, 6)
	rand.Read(b)
	channel := "recordhub_outbox_" + hex.EncodeToString(b)
	api := db.Open(t, models.Options{AnnounceEvents: true})
	api.UseOutboxChannel(channel)
	worker := db.Open(t, models.Options{})
	worker.UseOutboxChannel(channel)
	worker.ListenEvents(slog.New(slog.DiscardHandler))
	storetest.Eventually(t, wakeBound, "the worker's listener connected", func() bool { return worker.ListenerPID() != 0 })

	ctx := context.Background()
	tenant, _, _, err := api.CreateTenant(ctx, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	fields := []models.Field{{Name: "title", Type: models.TypeString}}
	slug, name := "things", "Things"
	m, err := api.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	return db, api, worker, m
}

// drain takes a pending wake-up, if any.
func drain(s *models.Store) {
	select {
	case <-s.EventWake():
	default:
	}
}

// mustWake fails the test unless s's EventWake signals within wakeBound.
func mustWake(t *testing.T, s *models.Store, what string) {
	t.Helper()
	select {
	case <-s.EventWake():
	case <-time.After(wakeBound):
		t.Fatalf("%s: the worker's dispatcher was not woken within %s", what, wakeBound)
	}
}

// TestOutboxNotifyWakesOtherProcess: on PostgreSQL a record created
// through one store (an API replica) wakes the dispatcher of another
// store on the same database (a worker), which writes nothing itself;
// after the worker's listening connection is killed, it comes back, wakes
// its dispatcher once reconnected, and a later write wakes it again.
func TestOutboxNotifyWakesOtherProcess(t *testing.T) {
	ctx := context.Background()
	db, api, worker, m := replicaAndWorker(t)

	drain(worker)
	if _, err := api.CreateRecord(ctx, m, map[string]any{"title": "one"}, nil); err != nil {
		t.Fatal(err)
	}
	mustWake(t, worker, "a record created by another store")

	old := worker.ListenerPID()
	var ended bool
	if err := db.SQL(t).QueryRowContext(ctx, "SELECT pg_terminate_backend($1)", old).Scan(&ended); err != nil || !ended {
		t.Fatalf("terminate the listener's backend %d: %v, %v", old, ended, err)
	}
	storetest.Eventually(t, wakeBound, "the listener reconnected", func() bool {
		pid := worker.ListenerPID()
		return pid != 0 && pid != old
	})
	// The listener signals once it listens again, before it publishes its
	// new connection: events may have been committed while it was away.
	select {
	case <-worker.EventWake():
	default:
		t.Error("no wake-up after the listener reconnected")
	}
	if _, err := api.CreateRecord(ctx, m, map[string]any{"title": "two"}, nil); err != nil {
		t.Fatal(err)
	}
	mustWake(t, worker, "a record created after the listener reconnected")
}

// TestOutboxNotifyCloseWithListener: Close returns promptly while the
// outbox listener waits for notifications, and the listener's connection
// is gone from the server afterwards.
func TestOutboxNotifyCloseWithListener(t *testing.T) {
	db := storetest.NewDB(t, models.Postgres)
	s := db.Open(t, models.Options{AnnounceEvents: true})
	s.ListenEvents(slog.New(slog.DiscardHandler))
	storetest.Eventually(t, wakeBound, "the listener connected", func() bool { return s.ListenerPID() != 0 })
	pid := s.ListenerPID()

	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(wakeBound):
		t.Fatalf("Close still running after %s with the listener running", wakeBound)
	}
	sql := db.SQL(t)
	storetest.Eventually(t, wakeBound, "the listener's backend gone", func() bool {
		var n int
		if err := sql.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

// levelCounter counts log records by level and message.
type levelCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *levelCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[r.Level.String()]++
	return nil
}
func (c *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *levelCounter) WithGroup(string) slog.Handler      { return c }

func (c *levelCounter) count(level slog.Level) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[level.String()]
}

// TestOutboxNotifyOutage: while PostgreSQL refuses the listener's
// connections, it retries, warning once for the outage and not for each
// attempt; when the server is back it listens again and says so once; and
// Close returns promptly while the server accepts connections and never
// answers.
func TestOutboxNotifyOutage(t *testing.T) {
	proxy, db := storetest.NewProxy(t, storetest.NewDB(t, models.Postgres))
	s := db.Open(t, models.Options{})
	logs := &levelCounter{counts: map[string]int{}}
	s.ListenEvents(slog.New(logs))
	listening := func() bool { return s.ListenerPID() != 0 }
	storetest.Eventually(t, wakeBound, "the listener connected", listening)

	proxy.Stop()
	// The first failure warns; three more attempts are debug records.
	storetest.Eventually(t, wakeBound, "three more attempts", func() bool { return logs.count(slog.LevelDebug) >= 3 })
	if listening() {
		t.Error("listening while the server is down")
	}
	if n := logs.count(slog.LevelWarn); n != 1 {
		t.Errorf("%d warnings during one outage, want 1", n)
	}
	drain(s)
	proxy.Start()
	storetest.Eventually(t, wakeBound, "the listener back", listening)
	mustWake(t, s, "the listener back")
	if w, i := logs.count(slog.LevelWarn), logs.count(slog.LevelInfo); w != 1 || i != 1 {
		t.Errorf("%d warnings and %d infos after one outage, want 1 and 1", w, i)
	}

	proxy.BlackHole()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(wakeBound):
		t.Fatalf("Close still running after %s while the server does not answer", wakeBound)
	}
}
