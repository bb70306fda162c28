-- +goose Up
-- An endpoint's throttle: at most rate_limit_per_second requests in any
-- second and max_in_flight requests at once, across every worker; NULL is
-- no limit. Nullable columns without a default: adding them rewrites no
-- table.
ALTER TABLE webhook_endpoints ADD COLUMN rate_limit_per_second INTEGER;
ALTER TABLE webhook_endpoints ADD COLUMN max_in_flight INTEGER;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN max_in_flight;
ALTER TABLE webhook_endpoints DROP COLUMN rate_limit_per_second;
