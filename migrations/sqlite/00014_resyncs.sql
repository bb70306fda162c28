-- +goose Up
-- Resync: one row per resync of an endpoint, its progress written by the
-- Resync workflow's activities after each page. n numbers an endpoint's
-- resyncs 1, 2, … from a counter on the endpoint (never given twice, so
-- webhook-resync/<endpoint id>/<n> never names a workflow Temporal may
-- still keep), and one resync runs per endpoint at a time.
--
-- position is the outbox position the resync is taken at: on SQLite the
-- largest rowid of events when it started. SQLite has one writer and gives
-- each new row the largest rowid plus one, so rowid order is commit order:
-- an event committed after the resync started has a larger rowid.
CREATE TABLE webhook_resyncs (
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
    started_at  DATETIME NOT NULL,
    finished_at DATETIME,
    UNIQUE (endpoint_id, n)
);
CREATE INDEX webhook_resyncs_tenant_idx ON webhook_resyncs (tenant_id, started_at);
CREATE INDEX webhook_resyncs_finished_idx ON webhook_resyncs (finished_at);
CREATE UNIQUE INDEX webhook_resyncs_running_idx ON webhook_resyncs (endpoint_id) WHERE status = 'running';
ALTER TABLE webhook_endpoints ADD COLUMN resync_seq INTEGER NOT NULL DEFAULT 0;

-- A resync pages through a module's records in id order, and asks of each
-- record whether an event of it was committed after its position.
CREATE INDEX records_module_id_idx ON records (module_id, id);
CREATE INDEX events_record_idx ON events (record_id);

-- +goose Down
DROP INDEX events_record_idx;
DROP INDEX records_module_id_idx;
ALTER TABLE webhook_endpoints DROP COLUMN resync_seq;
DROP TABLE webhook_resyncs;
