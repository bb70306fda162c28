-- +goose Up
-- Events are numbered for the change feed by the store as it inserts them
-- (one counter update a statement), no longer by a trigger that cost two
-- more writes an event. Snapshots a resync writes are no changes and stay
-- unnumbered.
DROP TRIGGER events_seq;

-- +goose Down
-- +goose StatementBegin
CREATE TRIGGER events_seq AFTER INSERT ON events
BEGIN
    UPDATE change_counter SET seq = seq + 1 WHERE id = 1;
    UPDATE events SET seq = (SELECT seq FROM change_counter WHERE id = 1) WHERE rowid = NEW.rowid;
END;
-- +goose StatementEnd
