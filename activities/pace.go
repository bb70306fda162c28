package activities

import (
	"context"
	"time"

	"github.com/recordhub/recordhub/models"
)

// BulkPaceStore books the starts of a tenant's resyncs and recoveries at
// its pace; *models.Store is one. The pace is kept in the database, so
// that it holds for the tenant's pages on every worker together.
type BulkPaceStore interface {
	BookBulkStarts(ctx context.Context, tenantID string, n int, now time.Time) (models.BulkSlots, error)
	// BulkPageLimit caps a page's size so that its paced starts end well
	// within the page's timeout.
	BulkPageLimit(limit int) int
}

// pace hands out the start times of one page's deliveries: the page of a
// resync and of a recovery alike waits on it before each start.
type pace struct {
	store    BulkPaceStore
	tenantID string
	now      func() time.Time
	// left is how many starts the page has not booked yet.
	left  int
	slots models.BulkSlots
}

func newPace(store BulkPaceStore, tenantID string, starts int, now func() time.Time) *pace {
	return &pace{store: store, tenantID: tenantID, now: now, left: starts}
}

// wait returns when the page may make its next start, booking its slots a
// second's worth at a time. A slot missed by more than its interval (the
// page fell behind: a slow start, a busy machine) is passed over, never
// made up for by a burst.
func (p *pace) wait(ctx context.Context) error {
	for {
		now := p.now()
		for p.slots.N > 0 && p.slots.Every > 0 && now.Sub(p.slots.First) > p.slots.Every {
			p.skip()
		}
		if p.slots.N > 0 {
			at := p.slots.First
			p.skip()
			return sleepUntil(ctx, at.Sub(now))
		}
		if p.left < 1 {
			// More starts than announced: book as for one more.
			p.left = 1
		}
		slots, err := p.store.BookBulkStarts(ctx, p.tenantID, p.left, now)
		if err != nil {
			return err
		}
		if slots.N < 1 {
			return nil
		}
		p.slots = slots
		p.left -= slots.N
	}
}

func (p *pace) skip() {
	p.slots.First = p.slots.First.Add(p.slots.Every)
	p.slots.N--
}

// sleepUntil waits d, or until ctx ends.
func sleepUntil(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
