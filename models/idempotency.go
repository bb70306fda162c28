package models

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// A write sent with an idempotency key is answered once: its answer is
// stored under (the API key's id, the idempotency key) in the transaction
// that made the change, and a retry with the same key is answered from the
// row. While a request holds a key, another with it is refused at once
// (ErrIdempotencyKeyBusy) rather than queued: the first one's answer is
// what the second will be given, once there is one.
//
// The lock is the database's on PostgreSQL, so that it holds across
// replicas: an advisory lock in its two-int4 form under
// idempotencyLockClass, which can never be the bigint key of a record's
// lock (atomic.go). On SQLite, which one process writes, it is a set of
// held keys in the store. A record create takes the same lock and stores
// its answer in its own statements instead (idempotent_create.go).

// idempotencyLockClass is the first int4 of the advisory locks on
// idempotency keys; the second is hashtext of the key. Two keys whose
// hashes meet share a lock: one is refused as busy while the other runs,
// and is answered on its retry.
const idempotencyLockClass = 0x1de4

// IdempotentAnswer is an answer stored under an idempotency key.
type IdempotentAnswer struct {
	// Fingerprint identifies the request that was answered (its method,
	// path and body); a request with the key and another fingerprint is
	// not a retry.
	Fingerprint []byte
	Status      int
	// Header holds the answer's headers that a replay repeats.
	Header map[string]string
	// Body is the answer's body; it is stored sealed.
	Body []byte
}

// Same reports whether fingerprint is the one the answer was given to.
func (a *IdempotentAnswer) Same(fingerprint []byte) bool {
	return bytes.Equal(a.Fingerprint, fingerprint)
}

// ErrIdempotencyKeyBusy refuses a request whose idempotency key another
// request holds: that one is still running, or has just stored its answer.
var ErrIdempotencyKeyBusy = &Error{Kind: KindConflict, Message: "a request with this Idempotency-Key is still being processed; retry it later"}

// heldKeys is SQLite's lock on idempotency keys: the keys held, each by
// one request of this process.
type heldKeys struct {
	mu   sync.Mutex
	held map[string]struct{}
}

func (h *heldKeys) try(k string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.held[k]; ok {
		return false
	}
	if h.held == nil {
		h.held = map[string]struct{}{}
	}
	h.held[k] = struct{}{}
	return true
}

func (h *heldKeys) release(k string) {
	h.mu.Lock()
	delete(h.held, k)
	h.mu.Unlock()
}

// idemLockName is the text a key's lock is taken on: API key ids hold
// no space.
func idemLockName(keyID, key string) string { return keyID + " " + key }

// sealLabel binds a stored body to its row: a sealed body copied under
// another key does not open.
func sealLabel(keyID, key string) string { return "idempotency:" + keyID + ":" + key }

// ClaimIdempotencyKey takes the lock on the API key keyID's idempotency
// key and returns the answer stored under it less than ttl ago, nil when
// there is none. It answers ErrIdempotencyKeyBusy at once when another
// request holds the lock.
//
// In a transaction of Atomically's the lock holds until the transaction
// ends (on PostgreSQL it is taken by the same statement that reads the
// row: one round trip). Outside one, it is taken for a request that must
// not run in a transaction (one that calls out of the database) and holds
// until release. release must be called in both cases, once the
// transaction has ended; it is nil when err is not.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, keyID, key string, ttl time.Duration) (release func(), a *IdempotentAnswer, err error) {
	since := s.now().Add(-ttl)
	if s.dialect == Postgres {
		if tx := ambientTx(ctx); tx != nil {
			row := s.queryRow(tx, claimInTx, idemLockName(keyID, key), keyID, key, since)
			a, err := s.scanClaim(row, keyID, key)
			if err != nil {
				return nil, nil, err
			}
			return func() {}, a, nil
		}
		return s.holdIdempotencyKey(ctx, keyID, key, since)
	}
	name := idemLockName(keyID, key)
	if !s.idemHeld.try(name) {
		return nil, nil, ErrIdempotencyKeyBusy
	}
	release = func() { s.idemHeld.release(name) }
	db := s.r.WithContext(ctx)
	if tx := ambientTx(ctx); tx != nil {
		db = tx
	}
	row := s.queryRow(db, readAnswer, keyID, key, since)
	a, err = s.scanClaim(row, keyID, key)
	if err != nil {
		release()
		return nil, nil, err
	}
	return release, a, nil
}

// readAnswer reads, on SQLite, a key's live row after its lock, as
// scanClaim reads a claim.
const readAnswer = `SELECT 1, fingerprint, status, headers, body FROM idempotency_keys
	WHERE key_id = ? AND idem_key = ? AND created_at >= ?`

// claimInTx locks a key for the transaction and reads its row in one
// statement. The row is read under the statement's snapshot, which may be
// older than the lock: a request that committed its answer in between is
// not seen, and the one that runs again finds that answer's row when it
// stores its own (SaveIdempotentAnswer), and rolls back.
var claimInTx = `SELECT l.locked, i.fingerprint, i.status, i.headers, i.body
	FROM (SELECT pg_try_advisory_xact_lock(` + strconv.Itoa(idempotencyLockClass) + `, hashtext(CAST(? AS text))) AS locked) AS l
	LEFT JOIN idempotency_keys i ON l.locked AND i.key_id = ? AND i.idem_key = ? AND i.created_at >= ?`

// holdIdempotencyKey takes, on PostgreSQL, the key's lock for a session
// on a connection set apart until release, and reads the key's row. The
// connection goes back to the pool once the lock is given back, or is
// closed when that fails, so that no other request inherits the lock.
func (s *Store) holdIdempotencyKey(ctx context.Context, keyID, key string, since time.Time) (func(), *IdempotentAnswer, error) {
	db, err := s.w.DB()
	if err != nil {
		return nil, nil, fmt.Errorf("pool: %w", err)
	}
	giveBack, err := s.takeHeldConn(ctx)
	if err != nil {
		return nil, nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		giveBack()
		return nil, nil, fmt.Errorf("hold idempotency key: %w", err)
	}
	lock := strconv.Itoa(idempotencyLockClass) + `, hashtext(CAST($1 AS text))`
	row := conn.QueryRowContext(ctx, `SELECT l.locked, i.fingerprint, i.status, i.headers, i.body
		FROM (SELECT pg_try_advisory_lock(`+lock+`) AS locked) AS l
		LEFT JOIN idempotency_keys i ON l.locked AND i.key_id = $2 AND i.idem_key = $3 AND i.created_at >= $4`,
		idemLockName(keyID, key), keyID, key, since)
	s.observe("SELECT pg_try_advisory_lock")
	a, err := s.scanClaim(row, keyID, key)
	if errors.Is(err, ErrIdempotencyKeyBusy) {
		conn.Close()
		giveBack()
		return nil, nil, err
	}
	release := func() {
		// Given back even when the request's context has ended.
		ctx := context.WithoutCancel(ctx)
		var unlocked bool
		err := conn.QueryRowContext(ctx, `SELECT pg_advisory_unlock(`+lock+`)`, idemLockName(keyID, key)).Scan(&unlocked)
		s.observe("SELECT pg_advisory_unlock")
		if err != nil || !unlocked {
			// A session that may still hold the lock is not given to
			// another request.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
		giveBack()
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return release, a, nil
}

// scanClaim reads a claim's row: whether the lock was taken, then the
// stored answer's columns, NULL when there is none.
func (s *Store) scanClaim(row *sql.Row, keyID, key string) (*IdempotentAnswer, error) {
	var (
		locked  bool
		fp      []byte
		status  sql.NullInt64
		headers sql.NullString
		body    sql.NullString
	)
	if err := row.Scan(&locked, &fp, &status, &headers, &body); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil // SQLite: no row, and the lock is held
		}
		return nil, fmt.Errorf("claim idempotency key: %w", err)
	}
	if !locked {
		return nil, ErrIdempotencyKeyBusy
	}
	return s.openAnswer(keyID, key, fp, status, headers, body)
}

// openAnswer is the answer a key's row stores, nil when status is NULL
// (there is no row).
func (s *Store) openAnswer(keyID, key string, fp []byte, status sql.NullInt64, headers, body sql.NullString) (*IdempotentAnswer, error) {
	if !status.Valid {
		return nil, nil
	}
	a := &IdempotentAnswer{Fingerprint: fp, Status: int(status.Int64)}
	if err := json.Unmarshal([]byte(headers.String), &a.Header); err != nil {
		return nil, fmt.Errorf("stored idempotent answer headers: %w", err)
	}
	plain, err := s.box.Open(body.String, sealLabel(keyID, key))
	if err != nil {
		return nil, fmt.Errorf("stored idempotent answer body: %w", err)
	}
	a.Body = []byte(plain)
	return a, nil
}

// saveAnswer inserts an answer, or replaces one that has expired.
const saveAnswer = `INSERT INTO idempotency_keys (key_id, idem_key, fingerprint, status, headers, body, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (key_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status,
		headers = excluded.headers, body = excluded.body, created_at = excluded.created_at
	WHERE idempotency_keys.created_at < ?`

// queryRow and exec run a statement of the idempotent path on db's
// connection or transaction straight through database/sql: they run on
// every keyed write, and GORM's statement building would cost a good
// part of what the statement itself does. They run under db's context,
// as GORM would: in SQLite's shared transaction that is one no caller
// can cancel (groupcommit.go).
func (s *Store) queryRow(db *gormDB, query string, args ...any) *sql.Row {
	q := s.bind(query)
	row := db.Statement.ConnPool.QueryRowContext(db.Statement.Context, q, args...)
	s.observe(q)
	return row
}

func (s *Store) exec(db *gormDB, query string, args ...any) (sql.Result, error) {
	q := s.bind(query)
	res, err := db.Statement.ConnPool.ExecContext(db.Statement.Context, q, args...)
	s.observe(q)
	return res, err
}

// SaveIdempotentAnswer stores a under the API key keyID's idempotency key,
// in ctx's transaction or in a statement of its own, replacing a row older
// than ttl. A younger row is another request's answer, stored since this
// one claimed the key: it answers ErrIdempotencyKeyBusy, and the caller
// rolls back what it did, the retry being answered from that row.
func (s *Store) SaveIdempotentAnswer(ctx context.Context, keyID, key string, ttl time.Duration, a IdempotentAnswer) error {
	headers, err := json.Marshal(a.Header)
	if err != nil {
		return fmt.Errorf("idempotent answer headers: %w", err)
	}
	if a.Header == nil {
		headers = []byte("{}")
	}
	now := s.now()
	sealed := s.box.SealBytes(a.Body, sealLabel(keyID, key))
	var stored int64
	err = s.writeOne(ctx, func(tx *gormDB) error {
		res, err := s.exec(tx, saveAnswer, keyID, key, a.Fingerprint, a.Status, string(headers), sealed, now, now.Add(-ttl))
		if err != nil {
			return err
		}
		stored, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("save idempotent answer: %w", err)
	}
	if stored == 0 {
		return ErrIdempotencyKeyBusy
	}
	return nil
}
