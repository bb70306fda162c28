package models_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// keyedCreateFixture is a store with a module to create records in with
// an idempotency key.
type keyedCreateFixture struct {
	db     *storetest.DB
	s      *models.Store
	clock  *storetest.Clock
	m      *models.Module
	keyID  string
	stmts  atomic.Int64
	counts atomic.Bool
}

func newKeyedCreateFixture(t *testing.T, d models.Dialect) *keyedCreateFixture {
	t.Helper()
	f := &keyedCreateFixture{db: storetest.NewDB(t, d), clock: storetest.NewClock()}
	f.s = f.db.Open(t, models.Options{Now: f.clock.Now, MaxOpenConns: 8, OnStatement: func(string) {
		if f.counts.Load() {
			f.stmts.Add(1)
		}
	}})
	tenantID, _ := newTenant(t, f.s)
	slug, name, fields := "notes", "Notes", []models.Field{{Name: "title", Type: models.TypeString}}
	m, err := f.s.CreateModule(context.Background(), tenantID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	f.m, f.keyID = m, "key_fixture"
	return f
}

// create creates a record with key, its answer's body naming the record.
func (f *keyedCreateFixture) create(ctx context.Context, key string, ttl time.Duration) (*models.KeyedCreate, *models.Record, error) {
	k := &models.KeyedCreate{
		KeyID: f.keyID, Key: key, TTL: ttl, Fingerprint: []byte("fp"),
		Render: func(r *models.Record) (models.IdempotentAnswer, error) {
			return models.IdempotentAnswer{Status: 201, Header: map[string]string{"ETag": `"1"`}, Body: []byte(r.ID)}, nil
		},
	}
	r, err := f.s.CreateRecord(models.WithKeyedCreate(ctx, k), f.m, map[string]any{"title": key}, nil)
	return k, r, err
}

func (f *keyedCreateFixture) records(t *testing.T) int {
	t.Helper()
	return len(f.db.Rows(t, "SELECT id FROM records WHERE module_id = ?", f.m.ID))
}

// TestKeyedCreate: a keyed create stores its rendered answer with the
// record, in one statement on PostgreSQL and one more than a plain
// create's on SQLite; its repeat creates nothing and finds the answer
// (in one statement on PostgreSQL); past the TTL the key's row is
// replaced by the new create's.
func TestKeyedCreate(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		f := newKeyedCreateFixture(t, d)
		const ttl = time.Hour
		if _, err := f.s.CreateRecord(ctx, f.m, nil, nil); err != nil { // warms the connections
			t.Fatal(err)
		}
		f.counts.Store(true)
		if _, err := f.s.CreateRecord(ctx, f.m, map[string]any{"title": "plain"}, nil); err != nil {
			t.Fatal(err)
		}
		plain := f.stmts.Swap(0)

		k, r, err := f.create(ctx, "k1", ttl)
		keyed := f.stmts.Swap(0)
		if err != nil || k.Stored() != nil || k.Busy() || !k.Taken() {
			t.Fatalf("first keyed create: %v (stored %v, busy %t, taken %t); want it made", err, k.Stored(), k.Busy(), k.Taken())
		}
		want := map[models.Dialect]int64{models.Postgres: 1, models.SQLite: plain + 1}[d]
		if keyed != want {
			t.Errorf("a keyed create sent %d statements (a plain one %d), want %d", keyed, plain, want)
		}

		again, _, err := f.create(ctx, "k1", ttl)
		replay := f.stmts.Swap(0)
		if err == nil || again.Stored() == nil || string(again.Stored().Body) != r.ID || again.Stored().Status != 201 {
			t.Fatalf("repeat: %v, stored %+v; want the first answer (body %s) and an error", err, again.Stored(), r.ID)
		}
		if d == models.Postgres && replay != 1 {
			t.Errorf("a repeat sent %d statements, want 1", replay)
		}
		if n := f.records(t); n != 3 {
			t.Errorf("%d records, want 3 (the repeat makes none)", n)
		}

		f.clock.Advance(ttl + time.Second)
		k, r2, err := f.create(ctx, "k1", ttl)
		if err != nil || k.Stored() != nil || r2.ID == r.ID {
			t.Fatalf("past the TTL: %v, stored %+v; want a new record", err, k.Stored())
		}
		again, _, _ = f.create(ctx, "k1", ttl)
		if again.Stored() == nil || string(again.Stored().Body) != r2.ID {
			t.Errorf("after the replacement the key answers %+v, want the new record %s", again.Stored(), r2.ID)
		}
		if rows := f.db.Rows(t, "SELECT idem_key FROM idempotency_keys"); len(rows) != 1 {
			t.Errorf("%d idempotency rows, want the one replaced", len(rows))
		}
	})
}

// TestKeyedCreateTwins: creates with one key at once make one record and
// one event; every other one finds the key busy or its answer.
func TestKeyedCreateTwins(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		f := newKeyedCreateFixture(t, d)
		for round := range 5 {
			key := fmt.Sprint("twin-", round)
			const n = 8
			var (
				wg                  sync.WaitGroup
				made, busy, replays atomic.Int64
				start               = make(chan struct{})
			)
			for range n {
				wg.Go(func() {
					<-start
					k, _, err := f.create(context.Background(), key, time.Hour)
					switch {
					case err == nil && k.Stored() == nil && !k.Busy():
						made.Add(1)
					case k.Busy() && errors.Is(err, models.ErrIdempotencyKeyBusy):
						busy.Add(1)
					case k.Stored() != nil && err != nil:
						replays.Add(1)
					default:
						t.Errorf("create: %v (stored %v, busy %t)", err, k.Stored(), k.Busy())
					}
				})
			}
			close(start)
			wg.Wait()
			t.Logf("%s: %d made, %d busy, %d replayed", key, made.Load(), busy.Load(), replays.Load())
			if made.Load() != 1 {
				t.Errorf("%s: %d made, want 1 (%d busy, %d replayed)", key, made.Load(), busy.Load(), replays.Load())
			}
			recs := f.db.Rows(t, "SELECT id FROM records WHERE module_id = ? AND CAST(fields AS text) LIKE ?", f.m.ID, "%"+key+"%")
			if len(recs) != 1 {
				t.Fatalf("%s: %d records, want 1", key, len(recs))
			}
			if evs := f.db.Rows(t, "SELECT id FROM events WHERE record_id = ?", recs[0]["id"]); len(evs) != 1 {
				t.Errorf("%s: %d events, want 1", key, len(evs))
			}
		}
	})
}

// BenchmarkKeyedCreate: a record create in the store, plain and with an
// idempotency key of its own, without HTTP; for profiling what the key
// adds below the API (the answer's rendering is a fixed body here), in
// the process's CPU per create.
//
//	go test ./models -run '^$' -bench KeyedCreate -benchtime 5000x -cpu 1
func BenchmarkKeyedCreate(b *testing.B) {
	for _, d := range storetest.Dialects {
		for _, keyed := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/keyed=%t", d, keyed), func(b *testing.B) {
				ctx := context.Background()
				s := storetest.NewDB(b, d).Open(b, models.Options{})
				tn, _, _, err := s.CreateTenant(ctx, "bench", 1_000_000)
				if err != nil {
					b.Fatal(err)
				}
				slug, name, fields := "notes", "Notes", []models.Field{{Name: "title", Type: models.TypeString}}
				m, err := s.CreateModule(ctx, tn.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
				if err != nil {
					b.Fatal(err)
				}
				body := []byte(`{"id":"rec_01m8dqd0wxgc96r4evea0461y1","module_id":"mod_01m8dqd0wxgc96r4evea0461y1","fields":{"title":"bench"},"custom_data":{},"version":1,"created_at":"2026-11-27T05:22:40.091896Z","updated_at":"2026-11-27T05:22:40.091896Z"}`)
				render := func(r *models.Record) (models.IdempotentAnswer, error) {
					return models.IdempotentAnswer{Status: 201, Header: map[string]string{"ETag": `"1"`}, Body: body}, nil
				}
				cpu := func() time.Duration {
					var ru syscall.Rusage
					if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
						b.Fatal(err)
					}
					return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				}
				b.ReportAllocs()
				cpu0 := cpu()
				b.ResetTimer()
				for i := range b.N {
					c := ctx
					if keyed {
						c = models.WithKeyedCreate(ctx, &models.KeyedCreate{KeyID: "key_bench", Key: fmt.Sprint("bench-", i), TTL: time.Hour, Fingerprint: body[:32], Render: render})
					}
					if _, err := s.CreateRecord(c, m, map[string]any{"title": "bench"}, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64((cpu()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}
