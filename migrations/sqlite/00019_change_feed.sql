-- +goose Up
-- The change feed (GET /api/modules/{id}/changes) lists a module's record
-- events in commit order. SQLite has one writer, which commits in order:
-- seq numbers events in that order, from a counter that only grows (a
-- rowid or MAX(seq) + 1 would hand a purged newest row's number out
-- again). A trigger fills it, so that every path that inserts events,
-- multi-row inserts included, numbers them. Existing rows are numbered by
-- rowid, their insertion order.
ALTER TABLE events ADD COLUMN seq INTEGER;
UPDATE events SET seq = rowid;
CREATE TABLE change_counter (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
);
INSERT INTO change_counter (id, seq) SELECT 1, COALESCE(MAX(rowid), 0) FROM events;
-- +goose StatementBegin
CREATE TRIGGER events_seq AFTER INSERT ON events
BEGIN
    UPDATE change_counter SET seq = seq + 1 WHERE id = 1;
    UPDATE events SET seq = (SELECT seq FROM change_counter WHERE id = 1) WHERE rowid = NEW.rowid;
END;
-- +goose StatementEnd

-- The position of the newest of a module's events that retention purged:
-- a cursor before it may have missed events, and is answered 410. txid is
-- always 0 here (PostgreSQL's positions have one).
CREATE TABLE change_horizons (
    module_id TEXT PRIMARY KEY,
    txid      INTEGER NOT NULL,
    seq       INTEGER NOT NULL
);

-- Snapshots (a resync's, for one endpoint) are not changes.
CREATE INDEX events_changes_idx ON events (module_id, seq) WHERE type <> 'record_snapshot';

-- +goose Down
DROP INDEX events_changes_idx;
DROP TABLE change_horizons;
DROP TRIGGER events_seq;
DROP TABLE change_counter;
ALTER TABLE events DROP COLUMN seq;
