-- +goose Up
-- An endpoint's credentials for receivers that want more than the
-- signature: auth holds its OAuth2 client credentials and tls its client
-- certificate, key and CA bundle, each as one sealed JSON object bound to
-- the endpoint's id ('' when none). auth_info and tls_info hold, in clear,
-- what answers show: the OAuth2 settings but the secret, and the
-- certificates' subjects and expiry ('' when none).
ALTER TABLE webhook_endpoints ADD COLUMN auth TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_endpoints ADD COLUMN auth_info TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_endpoints ADD COLUMN tls TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_endpoints ADD COLUMN tls_info TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN tls_info;
ALTER TABLE webhook_endpoints DROP COLUMN tls;
ALTER TABLE webhook_endpoints DROP COLUMN auth_info;
ALTER TABLE webhook_endpoints DROP COLUMN auth;
