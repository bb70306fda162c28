-- +goose Up
-- The pace of each tenant's resyncs and recoveries: next_at is when the
-- next delivery they start may start, in microseconds since 1970, booked
-- by every worker process (Store.BookBulkStarts). The running ones are
-- counted from webhook_resyncs and webhook_recoveries by tenant.
CREATE TABLE IF NOT EXISTS bulk_paces (
    tenant_id TEXT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    next_at   BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_resyncs_tenant_running_idx ON webhook_resyncs (tenant_id) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS webhook_recoveries_tenant_running_idx ON webhook_recoveries (tenant_id) WHERE status = 'running';

-- +goose Down
DROP INDEX IF EXISTS webhook_recoveries_tenant_running_idx;
DROP INDEX IF EXISTS webhook_resyncs_tenant_running_idx;
DROP TABLE IF EXISTS bulk_paces;
