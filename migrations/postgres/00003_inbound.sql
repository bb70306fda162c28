-- +goose Up
-- One inbound webhook per module. The URL token is looked up by its SHA-256
-- (token_hash) and kept sealed (token) so that admins can read the URL again;
-- the signing secret is sealed too.
CREATE TABLE inbound_webhooks (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    module_id        TEXT NOT NULL UNIQUE REFERENCES modules(id) ON DELETE CASCADE,
    token_hash       TEXT NOT NULL UNIQUE,
    token            TEXT NOT NULL,
    secret           TEXT,
    signature_scheme TEXT NOT NULL DEFAULT 'sha256',
    mapping          JSONB NOT NULL DEFAULT '[]',
    match_fields     JSONB NOT NULL DEFAULT '[]',
    enabled          BOOLEAN NOT NULL DEFAULT TRUE,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);

-- Every call that reached an inbound webhook, with its raw body and outcome.
-- delivery_id is the sender's id of the call (Idempotency-Key, webhook-id,
-- X-GitHub-Delivery): one applied call per id and webhook; a repeat is kept
-- with duplicate_of naming the call it repeats. replay_of names the kept
-- call that an admin replayed.
CREATE TABLE inbound_events (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    module_id      TEXT NOT NULL,
    webhook_id     TEXT NOT NULL,
    request_id     TEXT NOT NULL,
    status         INTEGER NOT NULL,
    action         TEXT,
    record_id      TEXT,
    error          TEXT NOT NULL DEFAULT '',
    error_message  TEXT NOT NULL DEFAULT '',
    error_details  JSONB NOT NULL DEFAULT '[]',
    headers        JSONB NOT NULL DEFAULT '{}',
    body           TEXT NOT NULL DEFAULT '',
    body_size      INTEGER NOT NULL DEFAULT 0,
    body_truncated BOOLEAN NOT NULL DEFAULT FALSE,
    ip             TEXT NOT NULL DEFAULT '',
    delivery_id    TEXT,
    duplicate_of   TEXT,
    replay_of      TEXT,
    received_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX inbound_events_module_idx ON inbound_events (module_id, received_at, id);
CREATE UNIQUE INDEX inbound_events_delivery_idx ON inbound_events (webhook_id, delivery_id)
    WHERE delivery_id IS NOT NULL AND duplicate_of IS NULL AND status = 202;

-- +goose Down
DROP TABLE inbound_events;
DROP TABLE inbound_webhooks;
