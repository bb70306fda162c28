-- +goose Up
-- Traces: the W3C traceparent of the request that wrote the
-- event, so that its deliveries continue that trace; '' when tracing was
-- off or the writer had no trace.
ALTER TABLE events ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE events DROP COLUMN trace_parent;
