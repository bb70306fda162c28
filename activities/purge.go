package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/recordhub/recordhub/models"
)

// PurgeStore deletes old rows; *models.Store satisfies it.
type PurgeStore interface {
	// Purge deletes at most batch rows of kind older than before and
	// returns how many it deleted.
	Purge(ctx context.Context, kind models.PurgeKind, before time.Time, batch int) (int64, error)
}

// Purge defaults.
const (
	// DefaultPurgeBatch rows are deleted per statement: each batch is one
	// short transaction, so no lock is held for long.
	DefaultPurgeBatch = 1000
	// DefaultPurgePause separates two batches, so that writes queued
	// behind one (SQLite has a single writer) go first.
	DefaultPurgePause = 50 * time.Millisecond
	// MaxPurgeBudget bounds one kind's purge in one run; what is left
	// waits for the next run. The workflow's activity timeout allows for it.
	MaxPurgeBudget = 10 * time.Minute
)

// PurgeConfig configures a Purger.
type PurgeConfig struct {
	// Retention is how long each kind of row is kept
	// (RECORDHUB_RETENTION*); a kind missing or zero is kept for ever.
	Retention map[models.PurgeKind]time.Duration
	// Batch is the rows per statement; zero means DefaultPurgeBatch.
	Batch int
	// Pause is the wait between batches; zero means DefaultPurgePause.
	Pause time.Duration
	// Budget bounds one kind's purge; zero or more than MaxPurgeBudget
	// means MaxPurgeBudget.
	Budget time.Duration
	// Now is the clock the cutoffs are computed from; time.Now when nil.
	Now func() time.Time
}

// Purger runs the retention purge, one kind of row per activity.
type Purger struct {
	store PurgeStore
	cfg   PurgeConfig
}

// NewPurger returns a Purger deleting through store.
func NewPurger(store PurgeStore, cfg PurgeConfig) *Purger {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultPurgeBatch
	}
	if cfg.Pause <= 0 {
		cfg.Pause = DefaultPurgePause
	}
	if cfg.Budget <= 0 || cfg.Budget > MaxPurgeBudget {
		cfg.Budget = MaxPurgeBudget
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Purger{store: store, cfg: cfg}
}

// PurgeInput names the kind of row to purge. It carries no time: the
// cutoff is computed by the activity from its configuration, so that the
// workflow stays deterministic and the retention is the worker's.
type PurgeInput struct {
	Kind models.PurgeKind `json:"kind"`
}

// PurgeOutput is what a purge of one kind did.
type PurgeOutput struct {
	Kind models.PurgeKind `json:"kind"`
	// Deleted counts the rows deleted, over every attempt of the activity,
	// with the numbering rows that go with the kind (finished recoveries
	// with delivery attempts, replay numbers of purged events with events).
	Deleted int64 `json:"deleted"`
	// Cutoff is the time before which rows were deleted; zero when the
	// kind is kept for ever.
	Cutoff time.Time `json:"cutoff,omitzero"`
	// More is true when the budget ran out with old rows left: the next
	// run goes on with them.
	More bool `json:"more,omitempty"`
}

// Purge deletes the kind's rows older than its retention, batch after
// batch with a pause between, heartbeating the count, until none is left
// or the budget is spent. A retried attempt carries on the count from the
// last heartbeat.
func (p *Purger) Purge(ctx context.Context, in PurgeInput) (PurgeOutput, error) {
	out := PurgeOutput{Kind: in.Kind}
	keep := p.cfg.Retention[in.Kind]
	if keep <= 0 {
		return out, nil
	}
	start := p.cfg.Now()
	out.Cutoff = start.Add(-keep).UTC()
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &out.Deleted)
	}
	for {
		n, err := p.store.Purge(ctx, in.Kind, out.Cutoff, p.cfg.Batch)
		if err != nil {
			return out, fmt.Errorf("purge %s: %w", in.Kind, err)
		}
		out.Deleted += n
		activity.RecordHeartbeat(ctx, out.Deleted)
		if n < int64(p.cfg.Batch) {
			return out, nil
		}
		if p.cfg.Now().Sub(start) >= p.cfg.Budget {
			out.More = true
			return out, nil
		}
		pause := time.NewTimer(p.cfg.Pause)
		select {
		case <-ctx.Done():
			pause.Stop()
			return out, ctx.Err()
		case <-pause.C:
		}
	}
}
