-- +goose Up
CREATE TABLE tenants (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    ai_key      TEXT,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    id                    TEXT PRIMARY KEY,
    tenant_id             TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    prefix                TEXT NOT NULL,
    hash                  TEXT NOT NULL UNIQUE,
    previous_hash         TEXT,
    previous_expires_at   TIMESTAMPTZ,
    admin                 BOOLEAN NOT NULL DEFAULT FALSE,
    permissions           JSONB NOT NULL DEFAULT '{}',
    rate_limit_per_minute INTEGER NOT NULL,
    expires_at            TIMESTAMPTZ,
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL,
    last_used_at          TIMESTAMPTZ,
    revoked_at            TIMESTAMPTZ
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at);
CREATE INDEX api_keys_previous_hash_idx ON api_keys (previous_hash) WHERE previous_hash IS NOT NULL;

CREATE TABLE modules (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    slug        TEXT NOT NULL,
    name        TEXT NOT NULL,
    fields      JSONB NOT NULL DEFAULT '[]',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (tenant_id, slug)
);

CREATE TABLE records (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    module_id   TEXT NOT NULL REFERENCES modules(id) ON DELETE CASCADE,
    fields      JSONB NOT NULL DEFAULT '{}',
    custom_data JSONB NOT NULL DEFAULT '{}',
    version     BIGINT NOT NULL DEFAULT 1,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX records_module_created_idx ON records (module_id, created_at, id);
CREATE INDEX records_module_updated_idx ON records (module_id, updated_at, id);

-- Exact record counts per module without COUNT(*) scans: each write adds to
-- one of a few shards, chosen at random, so concurrent writers rarely wait
-- on the same row.
CREATE TABLE module_record_counts (
    module_id TEXT NOT NULL REFERENCES modules(id) ON DELETE CASCADE,
    shard     INTEGER NOT NULL,
    count     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (module_id, shard)
);

CREATE TABLE access_logs (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT,
    key_id      TEXT,
    method      TEXT NOT NULL,
    path        TEXT NOT NULL,
    route       TEXT NOT NULL,
    module_id   TEXT,
    status      INTEGER NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL,
    ip          TEXT NOT NULL,
    user_agent  TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX access_logs_tenant_created_idx ON access_logs (tenant_id, created_at);
CREATE INDEX access_logs_key_created_idx ON access_logs (key_id, created_at);

CREATE TABLE key_usage (
    key_id       TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    bucket_start TIMESTAMPTZ NOT NULL,
    requests     BIGINT NOT NULL DEFAULT 0,
    errors       BIGINT NOT NULL DEFAULT 0,
    rate_limited BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, bucket_start)
);

-- +goose Down
DROP TABLE key_usage;
DROP TABLE access_logs;
DROP TABLE module_record_counts;
DROP TABLE records;
DROP TABLE modules;
DROP TABLE api_keys;
DROP TABLE tenants;
