package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// PurgeKind names a kind of row that retention deletes.
type PurgeKind string

// The kinds of rows retention deletes.
const (
	PurgeAccessLogs    PurgeKind = "access_logs"
	PurgeDeliveries    PurgeKind = "webhook_deliveries"
	PurgeEvents        PurgeKind = "events"
	PurgeInboundEvents PurgeKind = "inbound_events"
	// PurgeIdempotencyKeys are the answers stored under idempotency keys
	// (idempotency.go), kept for the idempotency TTL.
	PurgeIdempotencyKeys PurgeKind = "idempotency_keys"
)

// PurgeKinds lists every kind, in the order a purge takes them. The Purge
// workflow takes the kinds it knew before PurgeIdempotencyKeys from its
// own list, and that one behind a version (workflows/purge.go): a kind
// added here needs the same.
var PurgeKinds = []PurgeKind{PurgeAccessLogs, PurgeDeliveries, PurgeEvents, PurgeInboundEvents, PurgeIdempotencyKeys}

// purgeQueries delete one batch of a kind's rows older than a cutoff: the
// oldest first, chosen by primary key through the time column's index
// (migration 00005), so that a statement holds its locks on at most a
// batch of rows and never scans the table. Outbox events are purged only
// once dispatched (their partial index holds no pending event), by their
// dispatch time: an event dispatched late keeps its whole window for its
// deliveries' retries and replays.
var purgeQueries = map[PurgeKind]string{
	PurgeAccessLogs: `DELETE FROM access_logs WHERE id IN
		(SELECT id FROM access_logs WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
	PurgeDeliveries: `DELETE FROM webhook_deliveries WHERE id IN
		(SELECT id FROM webhook_deliveries WHERE started_at < ? ORDER BY started_at LIMIT ?)`,
	PurgeEvents: `DELETE FROM events WHERE id IN
		(SELECT id FROM events WHERE dispatched_at IS NOT NULL AND dispatched_at < ? ORDER BY dispatched_at LIMIT ?)`,
	PurgeInboundEvents: `DELETE FROM inbound_events WHERE id IN
		(SELECT id FROM inbound_events WHERE received_at < ? ORDER BY received_at LIMIT ?)`,
	PurgeIdempotencyKeys: `DELETE FROM idempotency_keys WHERE (key_id, idem_key) IN
		(SELECT key_id, idem_key FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
}

// purgeNumbering deletes, with a kind and by its cutoff, one batch of the
// numbering rows that can no longer name a workflow id again: a number
// reused would name a workflow Temporal may still keep, and its start
// would be refused.
//   - With events: replay numbers (webhook_replays) of events no longer
//     stored. A replay of a purged event is never started (the single
//     replay answers not found, a recovery counts it failed), so no
//     number of the event is asked for again. A replay row is written
//     after its event was dispatched, so one created before the cutoff
//     belongs to an event the same cutoff purges.
//   - With delivery attempts: finished recoveries. Their numbers come
//     from the endpoint's counter (recovery_seq), not from these rows.
var purgeNumbering = map[PurgeKind]string{
	PurgeEvents: `DELETE FROM webhook_replays WHERE (event_id, endpoint_id, n) IN
		(SELECT r.event_id, r.endpoint_id, r.n FROM webhook_replays r
		 WHERE r.created_at < ? AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = r.event_id)
		 ORDER BY r.created_at LIMIT ?)`,
	PurgeDeliveries: `DELETE FROM webhook_recoveries WHERE id IN
		(SELECT id FROM webhook_recoveries WHERE finished_at < ? AND status <> 'running' ORDER BY finished_at LIMIT ?)`,
}

// Purge deletes at most batch rows of kind older than before, the oldest
// first, in one short transaction, and returns how many it deleted: fewer
// than batch means none older is left. The same transaction deletes at
// most batch of the numbering rows that go with the kind (purgeNumbering),
// counted with them; deliveries also take their hourly stats rollups with
// them (at most batch of those too; the count returned is then the larger
// of the two). Callers loop, pausing between
// batches, so that writes are never stalled behind a long delete. Usage
// figures are unaffected: they are kept in key_usage, added to as access
// logs are written.
func (s *Store) Purge(ctx context.Context, kind PurgeKind, before time.Time, batch int) (int64, error) {
	q, ok := purgeQueries[kind]
	if !ok {
		return 0, fmt.Errorf("purge: unknown kind %q", kind)
	}
	if batch <= 0 {
		return 0, errors.New("purge: batch must be positive")
	}
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		if kind == PurgeEvents {
			// The change feed must learn which changes went.
			deleted, err := s.purgeEvents(tx, before.UTC(), batch)
			if err != nil {
				return fmt.Errorf("purge %s: %w", kind, err)
			}
			n = deleted
		} else {
			res := tx.Exec(q, before.UTC(), batch)
			if res.Error != nil {
				return fmt.Errorf("purge %s: %w", kind, res.Error)
			}
			n = res.RowsAffected
		}
		if q, ok := purgeNumbering[kind]; ok {
			res := tx.Exec(q, before.UTC(), batch)
			if res.Error != nil {
				return fmt.Errorf("purge %s numbering: %w", kind, res.Error)
			}
			n += res.RowsAffected
		}
		if kind != PurgeDeliveries {
			return nil
		}
		// Finished resyncs go with the delivery attempts, as recoveries
		// do; their numbers come from the endpoint's resync_seq.
		res := tx.Exec(purgeResyncs, before.UTC(), batch)
		if res.Error != nil {
			return fmt.Errorf("purge resyncs: %w", res.Error)
		}
		n += res.RowsAffected
		// The deliveries' hourly stats rollups share their retention: an
		// hour goes once it ended before the cutoff, a batch at a time
		// beside the rows. The larger count is returned, so that the
		// caller loops until neither has a full batch left.
		res = tx.Exec(purgeStatsHours, before.UTC().Truncate(time.Hour).Add(-time.Hour).Unix(), batch)
		if res.Error != nil {
			return fmt.Errorf("purge endpoint stats: %w", res.Error)
		}
		n = max(n, res.RowsAffected)
		return nil
	})
	return n, err
}

// purgeResyncs deletes one batch of resyncs finished before the cutoff.
const purgeResyncs = `DELETE FROM webhook_resyncs WHERE id IN
	(SELECT id FROM webhook_resyncs WHERE finished_at < ? AND status <> 'running' ORDER BY finished_at LIMIT ?)`

// purgeStatsHours deletes one batch of rollup rows of hours up to the
// given one (Unix seconds), through endpoint_stats_hours_hour_idx.
const purgeStatsHours = `DELETE FROM endpoint_stats_hours WHERE (tenant_id, endpoint_id, hour) IN
	(SELECT tenant_id, endpoint_id, hour FROM endpoint_stats_hours WHERE hour <= ? ORDER BY hour LIMIT ?)`
