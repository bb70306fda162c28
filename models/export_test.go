package models

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"
)

// HeavyPool returns the store's heavy-read pool, so that tests can hold its
// connections or run a statement of their own on it.
func (s *Store) HeavyPool() *sql.DB { return s.heavy }

// MergeLatenciesSQL is PostgreSQL's query that adds two latency
// histograms held as text, its two parameters.
func MergeLatenciesSQL() string {
	return "SELECT " + mergeLatencies("CAST($1 AS TEXT)", "CAST($2 AS TEXT)")
}

// AddHistograms adds two latency histograms held as text, in Go.
func AddHistograms(a, b string) (string, error) {
	h, err := parseHistogram(a)
	if err != nil {
		return "", err
	}
	o, err := parseHistogram(b)
	if err != nil {
		return "", err
	}
	h.add(o)
	return h.String(), nil
}

// UseOutboxChannel has the store announce and listen for outbox events on
// channel, so that a test hears no other test's announcements. Call it
// before the store writes or listens.
func (s *Store) UseOutboxChannel(channel string) { s.outboxChannel = channel }

// ListenerPID returns the server process of the outbox listener's
// connection once it listens (after its reconnect wake), else 0.
func (s *Store) ListenerPID() uint32 { return s.listenerPID.Load() }

// InsertDelivery stores a delivery row as given; a missing id is
// generated. Unlike InsertAttempt it marks no earlier attempt of the run
// worker_lost, so that tests can lay out rows in any state, those the
// store would have changed included.
func (s *Store) InsertDelivery(ctx context.Context, d *WebhookDelivery) error {
	if d.ID == "" {
		d.ID = NewID(PrefixDelivery)
	}
	d.utc()
	d.storable()
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(d).Error; err != nil {
			return err
		}
		ds := statsDeltas{}
		ds.add(d.statsState(), 1)
		return ds.apply(tx)
	})
	if err != nil {
		return fmt.Errorf("insert delivery: %w", err)
	}
	return nil
}
