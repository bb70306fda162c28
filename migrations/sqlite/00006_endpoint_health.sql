-- +goose Up
-- Endpoint health: updated once per delivery that ends, by the
-- endpoint's primary key. disabled_reason is "gone" (410), "failing"
-- (RECORDHUB_ENDPOINT_DISABLE_AFTER) or "manual" (PATCH enabled false).
ALTER TABLE webhook_endpoints ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_endpoints ADD COLUMN first_failure_at DATETIME;
ALTER TABLE webhook_endpoints ADD COLUMN last_success_at DATETIME;
ALTER TABLE webhook_endpoints ADD COLUMN last_failure_at DATETIME;
ALTER TABLE webhook_endpoints ADD COLUMN disabled_at DATETIME;
ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason TEXT;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN disabled_reason;
ALTER TABLE webhook_endpoints DROP COLUMN disabled_at;
ALTER TABLE webhook_endpoints DROP COLUMN last_failure_at;
ALTER TABLE webhook_endpoints DROP COLUMN last_success_at;
ALTER TABLE webhook_endpoints DROP COLUMN first_failure_at;
ALTER TABLE webhook_endpoints DROP COLUMN consecutive_failures;
