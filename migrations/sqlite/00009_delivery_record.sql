-- +goose Up
-- The deliveries list filters by record (record_id): every attempt row and
-- skipped row carries its event's record, written with the row. A join to
-- events would not do: retention purges dispatched events and delivery rows
-- separately, so an attempt may outlive its event. Operational events
-- (endpoint_disabled) have no record: their rows keep ''.
ALTER TABLE webhook_deliveries ADD COLUMN record_id TEXT NOT NULL DEFAULT '';
UPDATE webhook_deliveries SET record_id = COALESCE(
    (SELECT e.record_id FROM events e WHERE e.id = webhook_deliveries.event_id), '')
  WHERE record_id = '';
CREATE INDEX webhook_deliveries_record_idx ON webhook_deliveries (tenant_id, record_id, started_at);

-- +goose Down
DROP INDEX webhook_deliveries_record_idx;
ALTER TABLE webhook_deliveries DROP COLUMN record_id;
