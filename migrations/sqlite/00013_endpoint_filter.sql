-- +goose Up
-- An endpoint's content filter: record field name -> the value the field
-- must equal, every condition holding (models/endpoint_filter.go). '{}' is
-- no filter: every event the endpoint subscribes to is delivered. The
-- dispatcher checks it against the record an event carries before it
-- starts a delivery, so an event that does not match leaves no row.
ALTER TABLE webhook_endpoints ADD COLUMN event_filter TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN event_filter;
