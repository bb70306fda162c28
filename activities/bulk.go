package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/models"
)

// The page activities of recoveries and resyncs (bulk jobs) share how a
// page is sized, how it finds its endpoint, and how it starts its
// deliveries: several at once, at the tenant's pace. They are written here
// once.

// bulkPages is what a Recoverer and a Resyncer hold alike.
type bulkPages struct {
	pace BulkPaceStore
	// concurrency is how many starts of a page run at once.
	concurrency int
	now         func() time.Time
}

// newBulkPages returns bulkPages with concurrency below 1 meaning def and
// a nil now time.Now.
func newBulkPages(pace BulkPaceStore, concurrency, def int, now func() time.Time) bulkPages {
	if concurrency < 1 {
		concurrency = def
	}
	if now == nil {
		now = time.Now
	}
	return bulkPages{pace: pace, concurrency: concurrency, now: now}
}

// pageLimit is a page's size: limit, def when below 1, capped so that the
// page's paced starts end well within its timeout.
func (b bulkPages) pageLimit(limit, def int) int {
	if limit < 1 {
		limit = def
	}
	return b.pace.BulkPageLimit(limit)
}

// endpointStore reads endpoints; RecoveryStore and ResyncStore are ones.
type endpointStore interface {
	GetEndpoint(ctx context.Context, tenantID, id string) (*models.WebhookEndpoint, error)
}

// pageEndpoint loads the endpoint a page sends to. One deleted or disabled
// stops the job: a non-retryable error of type stopped, since going on
// would only fail.
func pageEndpoint(ctx context.Context, store endpointStore, tenantID, endpointID, stopped string) (*models.WebhookEndpoint, error) {
	ep, err := store.GetEndpoint(ctx, tenantID, endpointID)
	if errors.Is(err, models.ErrNotFound) {
		return nil, temporal.NewNonRetryableApplicationError("the endpoint was deleted", stopped, err)
	}
	if err != nil {
		return nil, fmt.Errorf("load endpoint: %w", err)
	}
	if !ep.Enabled {
		return nil, temporal.NewNonRetryableApplicationError("the endpoint was disabled", stopped, nil)
	}
	return ep, nil
}

// startPaced runs start for each of items, b.concurrency at a time at the
// tenant's pace, and returns the first error; after one, it starts no
// more. A failed start's error names the item (name).
func startPaced[T any](ctx context.Context, b bulkPages, tenantID string, items []T, name func(*T) string, start func(ctx context.Context, item *T) error) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, b.concurrency)
		once  sync.Once
		first error
		paced = newPace(b.pace, tenantID, len(items), b.now)
	)
	for i := range items {
		sem <- struct{}{}
		if err := paced.wait(sctx); err != nil && sctx.Err() == nil {
			once.Do(func() { first = err; cancel() })
		}
		if sctx.Err() != nil {
			<-sem
			break
		}
		item := &items[i]
		wg.Go(func() {
			defer func() { <-sem }()
			if err := start(sctx, item); err != nil {
				once.Do(func() {
					first = fmt.Errorf("%s: %w", name(item), err)
					cancel()
				})
			}
		})
		heartbeat(ctx)
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// keepAlive heartbeats every second until stopped, so that the heartbeat
// timeout means what it is for, a worker that died, and not a page whose
// starts are slow because Temporal is busy.
func keepAlive(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// heartbeat tells Temporal that the page's worker is alive: one step of a
// page (its read, its write, each start) is far shorter than the heartbeat
// timeout, a page is not.
func heartbeat(ctx context.Context) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx)
	}
}
