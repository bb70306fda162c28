-- +goose Up
-- The password (or NATS token) of a broker endpoint's URL (amqp, amqps,
-- nats), sealed and bound to the endpoint's id; the url column holds the
-- URL with "****" in its place, so that every answer, row, log line and
-- event that shows the URL shows it masked. '' when the URL has none.
ALTER TABLE webhook_endpoints ADD COLUMN url_secret TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN url_secret;
