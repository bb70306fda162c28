package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/models"
)

// fixture is what the scenarios need: a key that may do everything without
// meeting its rate limit, a module holding the seeded records and an empty
// one that takes the POSTs (so the list module keeps its exact total).
type fixture struct {
	key         string
	listModule  string
	writeModule string
	recordID    string // one seeded record, read by the GET scenario
}

// benchFields are the modules' fields; recordBody fits them.
var benchFields = []client.Field{
	{Name: "title", Type: "string", Required: true},
	{Name: "amount", Type: "integer"},
	{Name: "done", Type: "boolean"},
}

const recordBody = `{"fields":{"title":"bench record","amount":42,"done":false},"custom_data":{"source":"recordhub-bench"}}`

// setUp creates the bench key and modules through the admin API.
func setUp(ctx context.Context, s *service, adminKey string) (fixture, error) {
	var f fixture
	var err error
	admin := s.as(adminKey)
	if f.key, err = harness.UnlimitedKey(ctx, admin, "bench", "read", "write", "delete"); err != nil {
		return f, err
	}
	for slug, dst := range map[string]*string{"bench_list": &f.listModule, "bench_write": &f.writeModule} {
		m, err := admin.CreateModule(ctx, client.ModuleInput{Slug: slug, Name: slug, Fields: benchFields})
		if err != nil {
			return f, fmt.Errorf("create module %s: %w", slug, err)
		}
		*dst = m.ID
	}
	return f, nil
}

// seedConcurrency is the store's concurrent creates while seeding: on
// SQLite they share commits, on PostgreSQL they use as many connections.
const seedConcurrency = 16

// openServiceStore opens the service's database through the store, as the
// service does: DATABASE_URL, else the SQLite file in its data directory,
// with the secret key it was given. The service has migrated it.
func openServiceStore(ctx context.Context, env map[string]string) (*models.Store, error) {
	key, err := models.ParseSecretKey(env["RECORDHUB_SECRET_KEY"])
	if err != nil {
		return nil, fmt.Errorf("bench secret key: %w", err)
	}
	box, err := models.NewSecretBox(key)
	if err != nil {
		return nil, err
	}
	opts := models.Options{SecretBox: box, MaxOpenConns: seedConcurrency}
	if u := env["DATABASE_URL"]; u != "" {
		return models.OpenPostgres(ctx, u, opts)
	}
	return models.OpenSQLite(ctx, filepath.Join(env["RECORDHUB_DATA_DIR"], "recordhub.db"), opts)
}

// seedRecords creates n records in the module of the key's tenant through
// the store, as the API would (each with its record_created event and its
// count), seedConcurrency at a time, then settles their events
// (settleEvents). It returns the id of the record created in the middle.
func seedRecords(ctx context.Context, store *models.Store, key, moduleID string, n int) (string, error) {
	k, err := store.Authenticate(ctx, key)
	if err != nil {
		return "", fmt.Errorf("seed: bench key: %w", err)
	}
	m, err := store.GetModule(ctx, k.TenantID, moduleID)
	if err != nil {
		return "", fmt.Errorf("seed: module %s: %w", moduleID, err)
	}
	var (
		next   atomic.Int64
		middle atomic.Value
		errs   = make(chan error, seedConcurrency)
		wg     sync.WaitGroup
	)
	for range seedConcurrency {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				r, err := store.CreateRecord(ctx, m, map[string]any{"title": "seeded record", "amount": 42, "done": false},
					map[string]any{"source": "recordhub-bench"})
				if err != nil {
					errs <- fmt.Errorf("seed record %d: %w", i, err)
					return
				}
				if i == int64(n/2)+1 {
					middle.Store(r.ID)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return "", err
	}
	id, _ := middle.Load().(string)
	return id, settleEvents(ctx, store, m)
}

// settleEvents marks the module's pending record_created events
// dispatched, which is what the service's dispatcher does with an event no
// endpoint subscribes to, a claim of a few hundred at a time: for 100,000
// seeded records that took minutes on PostgreSQL, during which the
// scenarios could not start. With an endpoint subscribed it leaves the
// events to the dispatcher, which must deliver them.
func settleEvents(ctx context.Context, store *models.Store, m *models.Module) error {
	eps, err := store.SubscribedEndpoints(ctx, m.TenantID, models.EventRecordCreated, m.ID)
	if err != nil || len(eps) > 0 {
		return err
	}
	for {
		evs, err := store.PendingEvents(ctx, 1000)
		if err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		var ids []string
		for _, ev := range evs {
			if ev.TenantID == m.TenantID && ev.ModuleID == m.ID && ev.Type == models.EventRecordCreated {
				ids = append(ids, ev.ID)
			}
		}
		if len(ids) == 0 {
			return nil // what is left is not these records': the dispatcher's
		}
		if err := store.MarkDispatched(ctx, ids); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
}

// waitOutboxDrained waits until no event waits in the outbox.
func waitOutboxDrained(ctx context.Context, store *models.Store, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		n, _, err := store.EventBacklog(ctx)
		if err != nil {
			return fmt.Errorf("seed: outbox: %w", err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("seed: %d events still in the outbox after %s", n, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkSeed asks the API what a client would see: the exact total on page
// 1, and the record the GET scenario reads.
func checkSeed(ctx context.Context, s *service, f fixture, want int) error {
	c := s.as(f.key)
	page, err := c.ListRecords(ctx, f.listModule, 1, 20)
	if err != nil {
		return fmt.Errorf("list seeded records: %w", err)
	}
	if page.Total != int64(want) || len(page.Data) != min(20, want) {
		return fmt.Errorf("seeded module lists %d records of a total of %d, want %d of %d", len(page.Data), page.Total, min(20, want), want)
	}
	rec, err := c.GetRecord(ctx, f.listModule, f.recordID)
	if err != nil {
		return fmt.Errorf("read a seeded record: %w", err)
	}
	if rec.ID != f.recordID || rec.Fields["title"] != "seeded record" {
		return fmt.Errorf("seeded record %s reads back as %+v", f.recordID, rec)
	}
	return nil
}
