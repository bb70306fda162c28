-- +goose Up
-- Custom headers an endpoint's requests carry (an Authorization for the
-- receiver's gateway, say). headers holds the whole set, names and values,
-- as one sealed JSON object, encrypted like the signing secret and bound
-- to the endpoint's id; '' when there are none. header_names is the JSON
-- array of their names in clear, what answers show beside a mask, so that
-- reading an endpoint opens nothing.
ALTER TABLE webhook_endpoints ADD COLUMN headers TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_endpoints ADD COLUMN header_names TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN header_names;
ALTER TABLE webhook_endpoints DROP COLUMN headers;
