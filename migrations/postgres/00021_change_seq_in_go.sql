-- +goose Up
-- Nothing on PostgreSQL: a sequence numbers its events (00019). SQLite's
-- events are numbered by the store from this release on.
SELECT 1;

-- +goose Down
SELECT 1;
