-- +goose Up
-- Bulk recovery: one row per recovery, its progress written by
-- the Recovery workflow's activities after each page. n numbers an
-- endpoint's recoveries 1, 2, … and names the workflow,
-- webhook-recovery/<endpoint id>/<n>. window_since and window_until bound
-- started_at of the deliveries it looks at; as_of is when it was asked for.
CREATE TABLE webhook_recoveries (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    endpoint_id  TEXT NOT NULL,
    n            INTEGER NOT NULL,
    workflow_id  TEXT NOT NULL,
    window_since DATETIME NOT NULL,
    window_until DATETIME NOT NULL,
    status       TEXT NOT NULL,
    found        INTEGER NOT NULL DEFAULT 0,
    replayed     INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    error        TEXT NOT NULL DEFAULT '',
    started_at   DATETIME NOT NULL,
    finished_at  DATETIME,
    UNIQUE (endpoint_id, n)
);
CREATE INDEX webhook_recoveries_tenant_idx ON webhook_recoveries (tenant_id, started_at);

-- A recovery's replays are ordinary replays, tagged with it: at most one
-- per event per recovery, however often a page is retried. Replay numbers
-- and recoveries are never purged: a number used again would name a
-- workflow Temporal may still keep, and the replay would not be sent.
ALTER TABLE webhook_replays ADD COLUMN recovery_id TEXT;
CREATE UNIQUE INDEX webhook_replays_recovery_idx ON webhook_replays (recovery_id, event_id) WHERE recovery_id IS NOT NULL;

-- A recovery pages through an endpoint's deliveries by event id, keeping
-- those in its window, without sorting them all for each page.
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, event_id, started_at);

-- +goose Down
DROP INDEX webhook_deliveries_endpoint_idx;
DROP INDEX webhook_replays_recovery_idx;
ALTER TABLE webhook_replays DROP COLUMN recovery_id;
DROP TABLE webhook_recoveries;
