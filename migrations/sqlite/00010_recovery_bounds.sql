-- +goose Up
-- Bounds on bulk recovery.

-- Recovery numbers come from a counter on the endpoint, which outlives the
-- recovery rows that retention deletes: a number is never given twice, so
-- webhook-recovery/<endpoint id>/<n> never names a workflow Temporal may
-- still keep.
ALTER TABLE webhook_endpoints ADD COLUMN recovery_seq INTEGER NOT NULL DEFAULT 0;
UPDATE webhook_endpoints SET recovery_seq = MAX(recovery_seq, COALESCE(
    (SELECT MAX(r.n) FROM webhook_recoveries r WHERE r.endpoint_id = webhook_endpoints.id), 0));

-- One running recovery per endpoint, held by the database so that API
-- processes racing each other cannot both start one. Recoveries left
-- running side by side before this rule keep only the newest running.
UPDATE webhook_recoveries SET status = 'failed', finished_at = strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'),
    error = 'another recovery of the endpoint was running; only one may run at a time'
  WHERE status = 'running' AND EXISTS (
    SELECT 1 FROM webhook_recoveries newer WHERE newer.endpoint_id = webhook_recoveries.endpoint_id
      AND newer.status = 'running' AND newer.n > webhook_recoveries.n);
CREATE UNIQUE INDEX webhook_recoveries_running_idx ON webhook_recoveries (endpoint_id) WHERE status = 'running';

-- A recovery that reached its cap says so, and where the next one starts.
ALTER TABLE webhook_recoveries ADD COLUMN capped BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE webhook_recoveries ADD COLUMN capped_at_event_id TEXT;
ALTER TABLE webhook_recoveries ADD COLUMN next_since DATETIME;

-- Retention deletes finished recoveries by their end, and replay numbers
-- of purged events by their age.
CREATE INDEX webhook_recoveries_finished_idx ON webhook_recoveries (finished_at);
CREATE INDEX webhook_replays_created_idx ON webhook_replays (created_at);

-- +goose Down
DROP INDEX webhook_replays_created_idx;
DROP INDEX webhook_recoveries_finished_idx;
ALTER TABLE webhook_recoveries DROP COLUMN next_since;
ALTER TABLE webhook_recoveries DROP COLUMN capped_at_event_id;
ALTER TABLE webhook_recoveries DROP COLUMN capped;
DROP INDEX webhook_recoveries_running_idx;
ALTER TABLE webhook_endpoints DROP COLUMN recovery_seq;
