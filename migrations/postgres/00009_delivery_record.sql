-- +goose NO TRANSACTION
-- +goose Up
-- The deliveries list filters by record (record_id): every attempt row and
-- skipped row carries its event's record, written with the row. A join to
-- events would not do: retention purges dispatched events and delivery rows
-- separately, so an attempt may outlive its event. Operational events
-- (endpoint_disabled) have no record: their rows keep ''.
-- Without a transaction, so that the index is built CONCURRENTLY (writes go
-- on meanwhile); each statement is safe to run again should one fail.
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS record_id TEXT NOT NULL DEFAULT '';
UPDATE webhook_deliveries d SET record_id = e.record_id
  FROM events e
  WHERE e.id = d.event_id AND d.record_id = '' AND e.record_id <> '';
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_record_idx ON webhook_deliveries (tenant_id, record_id, started_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_record_idx;
ALTER TABLE webhook_deliveries DROP COLUMN IF EXISTS record_id;
