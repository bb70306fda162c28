-- +goose Up
CREATE TABLE webhook_endpoints (
    id                         TEXT PRIMARY KEY,
    tenant_id                  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    url                        TEXT NOT NULL,
    description                TEXT NOT NULL DEFAULT '',
    events                     TEXT NOT NULL DEFAULT '[]',
    module_ids                 TEXT NOT NULL DEFAULT '[]',
    retry_max                  INTEGER NOT NULL DEFAULT 5,
    enabled                    BOOLEAN NOT NULL DEFAULT TRUE,
    secret                     TEXT NOT NULL,
    previous_secret            TEXT,
    previous_secret_expires_at DATETIME,
    created_at                 DATETIME NOT NULL,
    updated_at                 DATETIME NOT NULL
);
CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id, created_at);

-- The outbox: one row per record event, written in the transaction of the
-- record change. payload holds the exact body every delivery sends.
CREATE TABLE events (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    module_id     TEXT NOT NULL,
    record_id     TEXT NOT NULL,
    type          TEXT NOT NULL,
    payload       TEXT NOT NULL,
    occurred_at   DATETIME NOT NULL,
    dispatched_at DATETIME
);
CREATE INDEX events_pending_idx ON events (occurred_at) WHERE dispatched_at IS NULL;
CREATE INDEX events_tenant_idx ON events (tenant_id, occurred_at);

CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL,
    event_id         TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    endpoint_id      TEXT NOT NULL,
    workflow_id      TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    replay_of        TEXT,
    request_url      TEXT NOT NULL,
    request_headers  TEXT NOT NULL DEFAULT '{}',
    request_body     TEXT NOT NULL,
    response_status  INTEGER,
    response_headers TEXT NOT NULL DEFAULT '{}',
    response_body    TEXT NOT NULL DEFAULT '',
    error            TEXT NOT NULL DEFAULT '',
    error_message    TEXT NOT NULL DEFAULT '',
    remote_ip        TEXT NOT NULL DEFAULT '',
    duration_ms      REAL NOT NULL DEFAULT 0,
    dns_ms           REAL,
    connect_ms       REAL,
    tls_ms           REAL,
    first_byte_ms    REAL,
    started_at       DATETIME NOT NULL,
    finished_at      DATETIME NOT NULL,
    succeeded        BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX webhook_deliveries_tenant_idx ON webhook_deliveries (tenant_id, started_at);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id, endpoint_id);

-- Replays of one (event, endpoint) are numbered 1, 2, …
CREATE TABLE webhook_replays (
    event_id    TEXT NOT NULL,
    endpoint_id TEXT NOT NULL,
    n           INTEGER NOT NULL,
    workflow_id TEXT NOT NULL,
    created_at  DATETIME NOT NULL,
    PRIMARY KEY (event_id, endpoint_id, n)
);

-- +goose Down
DROP TABLE webhook_replays;
DROP TABLE webhook_deliveries;
DROP TABLE events;
DROP TABLE webhook_endpoints;
