-- +goose Up
-- Ordering per record. record_version is the version of the record an
-- event is about: the version its payload carries for a creation, update,
-- status or custom-data change and a snapshot, the last version plus one
-- for a deletion (the deletion is the record's next version); 0 for
-- operational events. The outbox hands a record's events out in
-- (record_version, occurred_at, id) order, and an endpoint whose ordering
-- is 'record' receives them in that order (workflows.RecordSequence).
-- A constant default: PostgreSQL adds both columns without rewriting the
-- tables.
ALTER TABLE events ADD COLUMN record_version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE webhook_endpoints ADD COLUMN ordering TEXT NOT NULL DEFAULT 'none';

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN ordering;
ALTER TABLE events DROP COLUMN record_version;
