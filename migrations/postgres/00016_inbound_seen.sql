-- +goose NO TRANSACTION
-- +goose Up
-- A signed inbound call whose id an earlier call carried is charged to its
-- source's budget, not the sender's, whatever became of that call: this
-- index answers whether one did. inbound_events_delivery_idx holds only
-- the applied calls. CONCURRENTLY, so that building it on a large table
-- does not stop writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbound_events_seen_idx ON inbound_events (webhook_id, delivery_id)
    WHERE delivery_id IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS inbound_events_seen_idx;
