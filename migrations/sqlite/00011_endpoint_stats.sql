-- +goose Up
-- Endpoint stats (include=stats) are read from hourly rollups kept as
-- attempts finish, so that their cost does not grow with the number of
-- attempts. One row per endpoint and UTC hour (hour: Unix seconds of its
-- start) by the attempts' start time; latencies holds the histogram of the
-- latencies of the hour's attempts that sent a request, as sparse
-- "bucket:count" pairs over fixed log-spaced buckets (models/endpoint_stats.go).
CREATE TABLE endpoint_stats_hours (
    tenant_id TEXT NOT NULL,
    endpoint_id TEXT NOT NULL,
    hour BIGINT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    succeeded BIGINT NOT NULL DEFAULT 0,
    latencies TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, endpoint_id, hour)
);
-- Retention deletes the oldest hours first.
CREATE INDEX endpoint_stats_hours_hour_idx ON endpoint_stats_hours (hour);
-- A row here asks the store to fill the rollups from the attempts already
-- written, once, right after migrating (the histogram's buckets are
-- computed in Go); the store deletes it in the transaction that fills them.
CREATE TABLE endpoint_stats_backfill (pending INTEGER PRIMARY KEY);
INSERT INTO endpoint_stats_backfill (pending) VALUES (1);

-- +goose Down
DROP TABLE endpoint_stats_backfill;
DROP INDEX endpoint_stats_hours_hour_idx;
DROP TABLE endpoint_stats_hours;
