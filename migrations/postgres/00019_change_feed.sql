-- +goose NO TRANSACTION
-- +goose Up
-- The change feed (GET /api/modules/{id}/changes) lists a module's record
-- events in commit order. An event's position is (txid, seq): txid, the
-- writing transaction's id (00014), and seq, from a sequence, which orders
-- a transaction's own events. A read lists only events whose txid is below
-- its snapshot's xmin, every transaction below which has ended, so that no
-- event can later appear before a position already handed out (see
-- models/changes.go). seq is added without a default first, then given one
-- for new rows: no rewrite of the table; older rows keep NULL and are not
-- in the feed.
-- Outside a transaction, for the CONCURRENTLY index; every statement may
-- therefore be run again.
CREATE SEQUENCE IF NOT EXISTS events_seq;
ALTER TABLE events ADD COLUMN IF NOT EXISTS seq BIGINT;
ALTER TABLE events ALTER COLUMN seq SET DEFAULT nextval('events_seq');
ALTER SEQUENCE events_seq OWNED BY events.seq;

-- The position of the newest of a module's events that retention purged:
-- a cursor before it may have missed events, and is answered 410.
CREATE TABLE IF NOT EXISTS change_horizons (
    module_id TEXT PRIMARY KEY,
    txid      BIGINT NOT NULL,
    seq       BIGINT NOT NULL
);

-- Snapshots (a resync's, for one endpoint) are not changes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_changes_idx ON events (module_id, txid, seq)
    WHERE type <> 'record_snapshot';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS events_changes_idx;
DROP TABLE IF EXISTS change_horizons;
ALTER TABLE events DROP COLUMN IF EXISTS seq;
DROP SEQUENCE IF EXISTS events_seq;
