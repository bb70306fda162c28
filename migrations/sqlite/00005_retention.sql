-- +goose Up
-- Retention deletes the oldest rows of these tables in small
-- batches, each chosen through an index on its time column; the existing
-- indexes lead with the tenant, so without these every batch would scan.
CREATE INDEX access_logs_created_idx ON access_logs (created_at);
CREATE INDEX webhook_deliveries_started_idx ON webhook_deliveries (started_at);
CREATE INDEX events_dispatched_idx ON events (dispatched_at) WHERE dispatched_at IS NOT NULL;
CREATE INDEX inbound_events_received_idx ON inbound_events (received_at);

-- +goose Down
DROP INDEX inbound_events_received_idx;
DROP INDEX events_dispatched_idx;
DROP INDEX webhook_deliveries_started_idx;
DROP INDEX access_logs_created_idx;
