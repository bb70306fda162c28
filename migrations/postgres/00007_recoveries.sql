-- +goose NO TRANSACTION
-- +goose Up
-- Bulk recovery: one row per recovery, its progress written by
-- the Recovery workflow's activities after each page. n numbers an
-- endpoint's recoveries 1, 2, … and names the workflow,
-- webhook-recovery/<endpoint id>/<n>. window_since and window_until bound
-- started_at of the deliveries it looks at.
-- Outside a transaction, for the CONCURRENTLY index on webhook_deliveries;
-- every statement may therefore be run again (IF NOT EXISTS).
CREATE TABLE IF NOT EXISTS webhook_recoveries (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    endpoint_id  TEXT NOT NULL,
    n            INTEGER NOT NULL,
    workflow_id  TEXT NOT NULL,
    window_since TIMESTAMPTZ NOT NULL,
    window_until TIMESTAMPTZ NOT NULL,
    status       TEXT NOT NULL,
    found        INTEGER NOT NULL DEFAULT 0,
    replayed     INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    error        TEXT NOT NULL DEFAULT '',
    started_at   TIMESTAMPTZ NOT NULL,
    finished_at  TIMESTAMPTZ,
    UNIQUE (endpoint_id, n)
);
CREATE INDEX IF NOT EXISTS webhook_recoveries_tenant_idx ON webhook_recoveries (tenant_id, started_at);

-- A recovery's replays are ordinary replays, tagged with it: at most one
-- per event per recovery, however often a page is retried. Replay numbers
-- and recoveries are never purged: a number used again would name a
-- workflow Temporal may still keep, and the replay would not be sent.
ALTER TABLE webhook_replays ADD COLUMN IF NOT EXISTS recovery_id TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS webhook_replays_recovery_idx ON webhook_replays (recovery_id, event_id) WHERE recovery_id IS NOT NULL;

-- A recovery pages through an endpoint's deliveries by event id, keeping
-- those in its window, without sorting them all for each page.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, event_id, started_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_endpoint_idx;
DROP INDEX IF EXISTS webhook_replays_recovery_idx;
ALTER TABLE webhook_replays DROP COLUMN IF EXISTS recovery_id;
DROP TABLE IF EXISTS webhook_recoveries;
