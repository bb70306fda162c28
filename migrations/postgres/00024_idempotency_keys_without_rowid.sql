-- +goose Up
-- Nothing on PostgreSQL, whose tables have no rowid: SQLite's answers'
-- table is rebuilt without one.
SELECT 1;

-- +goose Down
SELECT 1;
