-- +goose Up
-- Fan-out in parts. A dispatcher round starts a bounded number of one
-- tenant's deliveries, so that an event subscribed to by many endpoints is
-- started over several rounds; fanout_after is the id of the last endpoint
-- (in id order) whose delivery of the event was started, '' when none was.
-- The next round starts the endpoints after it.
ALTER TABLE events ADD COLUMN fanout_after TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE events DROP COLUMN fanout_after;
