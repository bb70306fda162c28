-- +goose NO TRANSACTION
-- +goose Up
-- Retention deletes the oldest rows of these tables in small
-- batches, each chosen through an index on its time column; the existing
-- indexes lead with the tenant, so without these every batch would scan.
-- CONCURRENTLY, so that building them on a large table does not stop writes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS access_logs_created_idx ON access_logs (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_started_idx ON webhook_deliveries (started_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_dispatched_idx ON events (dispatched_at) WHERE dispatched_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbound_events_received_idx ON inbound_events (received_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS inbound_events_received_idx;
DROP INDEX CONCURRENTLY IF EXISTS events_dispatched_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_started_idx;
DROP INDEX CONCURRENTLY IF EXISTS access_logs_created_idx;
