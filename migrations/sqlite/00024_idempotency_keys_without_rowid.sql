-- +goose Up
-- The answers' table keeps its rows in its primary key's order, without a
-- rowid: a keyed write then changes two b-trees (the key and created_at's
-- index), not three, and writes that many fewer pages at each commit.
CREATE TABLE idempotency_keys_by_key (
    key_id      TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    status      INTEGER NOT NULL,
    headers     TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  DATETIME NOT NULL,
    PRIMARY KEY (key_id, idem_key)
) WITHOUT ROWID;
INSERT INTO idempotency_keys_by_key SELECT key_id, idem_key, fingerprint, status, headers, body, created_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_by_key RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- +goose Down
CREATE TABLE idempotency_keys_with_rowid (
    key_id      TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    status      INTEGER NOT NULL,
    headers     TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  DATETIME NOT NULL,
    PRIMARY KEY (key_id, idem_key)
);
INSERT INTO idempotency_keys_with_rowid SELECT key_id, idem_key, fingerprint, status, headers, body, created_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_with_rowid RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
