-- +goose Up
-- The answers of writes sent with an Idempotency-Key (api/idempotency.go):
-- one row per API key and idempotency key, written in the transaction that
-- made the change, so that a retry is answered from here. fingerprint is
-- the SHA-256 of the request's method, path with query, and body; headers
-- holds the answer's Content-Type, ETag and Location as a JSON object; body
-- is sealed with the store's SecretBox (some answers hold secrets). Rows
-- older than the TTL count as absent and are purged by created_at. A new
-- table: nothing is rewritten.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    key_id      TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    status      INTEGER NOT NULL,
    headers     TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  DATETIME NOT NULL,
    PRIMARY KEY (key_id, idem_key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created_idx ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE IF EXISTS idempotency_keys;
