-- +goose NO TRANSACTION
-- +goose Up
-- Resync: one row per resync of an endpoint, its progress written by the
-- Resync workflow's activities after each page. n numbers an endpoint's
-- resyncs 1, 2, … from a counter on the endpoint (never given twice, so
-- webhook-resync/<endpoint id>/<n> never names a workflow Temporal may
-- still keep), and one resync runs per endpoint at a time.
-- Outside a transaction, for the CONCURRENTLY indexes on large tables;
-- every statement may therefore be run again.
CREATE TABLE IF NOT EXISTS webhook_resyncs (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    endpoint_id TEXT NOT NULL,
    n           INTEGER NOT NULL,
    workflow_id TEXT NOT NULL,
    position    TEXT NOT NULL,
    status      TEXT NOT NULL,
    total       INTEGER NOT NULL DEFAULT 0,
    examined    INTEGER NOT NULL DEFAULT 0,
    sent        INTEGER NOT NULL DEFAULT 0,
    covered     INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    UNIQUE (endpoint_id, n)
);
CREATE INDEX IF NOT EXISTS webhook_resyncs_tenant_idx ON webhook_resyncs (tenant_id, started_at);
CREATE INDEX IF NOT EXISTS webhook_resyncs_finished_idx ON webhook_resyncs (finished_at);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_resyncs_running_idx ON webhook_resyncs (endpoint_id) WHERE status = 'running';
ALTER TABLE webhook_endpoints ADD COLUMN IF NOT EXISTS resync_seq INTEGER NOT NULL DEFAULT 0;

-- The outbox position of a resync is a PostgreSQL snapshot
-- (pg_current_snapshot()), and each event carries the id of the
-- transaction that wrote it: an event committed after the resync started
-- is exactly one whose transaction the snapshot does not see
-- (pg_visible_in_snapshot). Ids or sequence numbers would not do: they are
-- taken when a row is written, not when it commits, so a transaction that
-- commits late would hide behind an earlier number. The column is added
-- without a default first (no rewrite of the table), then given one for
-- new rows: older rows keep NULL, committed before any resync.
ALTER TABLE events ADD COLUMN IF NOT EXISTS txid BIGINT;
ALTER TABLE events ALTER COLUMN txid SET DEFAULT (pg_current_xact_id()::text::bigint);

-- A resync pages through a module's records in id order, and asks of each
-- record whether an event of it was committed after its position.
CREATE INDEX CONCURRENTLY IF NOT EXISTS records_module_id_idx ON records (module_id, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_record_idx ON events (record_id, txid);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS events_record_idx;
DROP INDEX CONCURRENTLY IF EXISTS records_module_id_idx;
ALTER TABLE events DROP COLUMN IF EXISTS txid;
ALTER TABLE webhook_endpoints DROP COLUMN IF EXISTS resync_seq;
DROP TABLE IF EXISTS webhook_resyncs;
