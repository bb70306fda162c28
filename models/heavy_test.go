package models_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// hangGuard is how long a test waits for a call that must complete before
// it calls the call hung; no test expects to come near it.
const hangGuard = 30 * time.Second

// holdHeavyPool takes every connection of s's heavy-read pool and holds
// each in an open read transaction until release is called (or the test
// ends): heavy reads then wait, as they would behind long-running ones.
func holdHeavyPool(t *testing.T, s *models.Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	var held []*sql.Conn
	release = func() {
		for _, c := range held {
			c.ExecContext(context.Background(), "ROLLBACK")
			c.Close()
		}
		held = nil
	}
	t.Cleanup(release)
	for range models.DefaultHeavyReadConns {
		c, err := s.HeavyPool().Conn(ctx)
		if err != nil {
			t.Fatalf("take a heavy connection: %v", err)
		}
		held = append(held, c)
		if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatalf("begin: %v", err)
		}
		var n int
		if err := c.QueryRowContext(ctx, "SELECT count(*) FROM modules").Scan(&n); err != nil {
			t.Fatalf("read in the held transaction: %v", err)
		}
	}
	if got := s.HeavyPool().Stats().InUse; got != models.DefaultHeavyReadConns {
		t.Fatalf("heavy connections in use %d, want %d", got, models.DefaultHeavyReadConns)
	}
	return release
}

// untilHeavyWaits polls until n calls have waited for a heavy connection.
func untilHeavyWaits(t *testing.T, s *models.Store, n int64) {
	t.Helper()
	storetest.Eventually(t, hangGuard, fmt.Sprintf("%d waits for a heavy connection", n), func() bool {
		return s.HeavyPool().Stats().WaitCount >= n
	})
}

// tenantWithRecord creates a tenant with a module holding one record.
func tenantWithRecord(t *testing.T, s *models.Store, name string) (tenantID, secret string, m *models.Module, r *models.Record) {
	t.Helper()
	ctx := context.Background()
	tenant, _, secret, err := s.CreateTenant(ctx, name, 100000)
	if err != nil {
		t.Fatal(err)
	}
	fields := []models.Field{{Name: "n", Type: models.TypeInteger}}
	slug, title := "things", "Things"
	m, err = s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &title, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	r, err = s.CreateRecord(ctx, m, map[string]any{"n": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tenant.ID, secret, m, r
}

// TestHeavyReadsOwnPool: while every heavy-read connection is taken, the
// reads of an unmarked context (a key lookup, a module list, a record
// read) complete, and a marked read waits only until its deadline, with
// an error the API tells callers to retry; a cancelled one is not
// unavailable. Once the pool is free, marked reads run.
func TestHeavyReadsOwnPool(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			s := storetest.NewDB(t, d).Open(t, models.Options{})
			tenantID, secret, m, rec := tenantWithRecord(t, s, "b")
			release := holdHeavyPool(t, s)

			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			if _, err := s.Authenticate(ctx, secret); err != nil {
				t.Errorf("key lookup while heavy reads are held: %v", err)
			}
			if ms, err := s.ListModules(ctx, tenantID); err != nil || len(ms) != 1 {
				t.Errorf("module list while heavy reads are held: %d modules, %v", len(ms), err)
			}
			if got, err := s.GetRecord(ctx, tenantID, m.ID, rec.ID); err != nil || got.ID != rec.ID {
				t.Errorf("record read while heavy reads are held: %v, %v", got, err)
			}

			short, cancelShort := context.WithTimeout(models.HeavyRead(ctx), 100*time.Millisecond)
			_, err := s.ListModules(short, tenantID)
			cancelShort()
			if !errors.Is(err, context.DeadlineExceeded) || !models.IsUnavailable(err) {
				t.Errorf("heavy read past its deadline: %v, want a deadline, unavailable", err)
			}

			waits := s.HeavyPool().Stats().WaitCount
			cancelled, cancelNow := context.WithCancel(models.HeavyRead(ctx))
			done := make(chan error, 1)
			go func() {
				_, err := s.ListModules(cancelled, tenantID)
				done <- err
			}()
			untilHeavyWaits(t, s, waits+1)
			cancelNow()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || models.IsUnavailable(err) {
					t.Errorf("cancelled heavy read: %v, want cancelled, not unavailable", err)
				}
			case <-time.After(hangGuard):
				t.Fatal("a cancelled heavy read did not return")
			}

			release()
			if ms, err := s.ListModules(models.HeavyRead(ctx), tenantID); err != nil || len(ms) != 1 {
				t.Errorf("heavy read once the pool is free: %d modules, %v", len(ms), err)
			}
		})
	}
}

// TestHeavyStatementStopsAtDeadline: a statement on the heavy pool that
// runs past its context's deadline is stopped in the database (SQLite
// interrupts it; PostgreSQL is sent a cancel request, so the server stops
// it rather than running it to its end for nobody), and the pool's one
// connection serves the next statement.
func TestHeavyStatementStopsAtDeadline(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := storetest.NewDB(t, d)
			// A statement_timeout far beyond the test: only the deadline can
			// stop the statement.
			s := db.Open(t, models.Options{HeavyReadConns: 1, HeavyStatementTimeout: time.Hour})
			tag := fmt.Sprintf("heavy_deadline_%d", time.Now().UnixNano())
			// Each runs for minutes unless stopped.
			slow := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000000) SELECT count(*) AS " + tag + " FROM c"
			if d == models.Postgres {
				slow = "SELECT pg_sleep(600) AS " + tag
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				var v any
				done <- s.HeavyPool().QueryRowContext(ctx, slow).Scan(&v)
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("the slow statement finished; want it stopped at the deadline")
				}
				t.Logf("stopped with: %v", err)
			case <-time.After(hangGuard):
				t.Fatal("the slow statement ran on past its deadline")
			}

			if d == models.Postgres {
				// The server no longer runs it: polled, as the backend reports
				// its state a moment after it answers.
				sqlDB := db.SQL(t)
				t.Cleanup(func() {
					if t.Failed() { // leave no statement running behind
						sqlDB.Exec("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()", tag)
					}
				})
				storetest.Eventually(t, hangGuard, "PostgreSQL to stop the statement after its deadline", func() bool {
					var running int
					err := sqlDB.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()", tag).Scan(&running)
					if err != nil {
						t.Fatal(err)
					}
					return running == 0
				})
			}

			next, cancelNext := context.WithTimeout(context.Background(), hangGuard)
			defer cancelNext()
			var one int
			if err := s.HeavyPool().QueryRowContext(next, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Errorf("next statement on the heavy pool: %d, %v", one, err)
			}
		})
	}
}
