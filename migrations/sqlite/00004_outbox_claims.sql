-- +goose Up
-- Outbox claims: a dispatcher takes pending events for a lease
-- (claimed_until) before it starts their deliveries, so that several
-- dispatchers never start the same event, and a dead one's events are taken
-- over when its lease ends. Pending events are read per tenant, so that one
-- tenant's backlog cannot fill every batch: the index serves both the scan
-- of tenants with pending events and each tenant's oldest events.
ALTER TABLE events ADD COLUMN claimed_by TEXT;
ALTER TABLE events ADD COLUMN claimed_until DATETIME;
CREATE INDEX events_pending_tenant_idx ON events (tenant_id, occurred_at, id) WHERE dispatched_at IS NULL;
DROP INDEX events_pending_idx;

-- +goose Down
CREATE INDEX events_pending_idx ON events (occurred_at) WHERE dispatched_at IS NULL;
DROP INDEX events_pending_tenant_idx;
ALTER TABLE events DROP COLUMN claimed_until;
ALTER TABLE events DROP COLUMN claimed_by;
