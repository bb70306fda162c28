package models

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A record create sent with an idempotency key is the hottest keyed write,
// and the general path (a transaction of Atomically's that claims the
// key, runs the handler and stores its answer: five statements on
// PostgreSQL where the plain create sends one) nearly doubles its cost.
// Its answer depends on nothing but the record, whose id, version and
// times are made before it is inserted, so the answer can be rendered
// first and stored by the create's own statements: on PostgreSQL one
// autocommit statement takes the key's lock, reads the key's row and,
// only when it holds the lock and finds no live row, inserts the record,
// its events, its count and the answer; on SQLite the answer's insert
// joins the record's group-commit job. The contract is idempotency.go's:
// a key held by another request is busy, a live row is replayed, an
// expired one is replaced.

// KeyedCreate asks the record create made with a context that carries it
// (WithKeyedCreate) to store its answer under an idempotency key in the
// create's own statements, and tells the caller what the create found.
// It serves one create of one request.
type KeyedCreate struct {
	KeyID, Key string
	// TTL is how long a stored answer answers its retries.
	TTL time.Duration
	// Fingerprint identifies the request (IdempotentAnswer.Fingerprint).
	Fingerprint []byte
	// Render is the answer the create of r is given, rendered before r
	// is inserted by the code that renders it after.
	Render func(r *Record) (IdempotentAnswer, error)

	taken    bool
	busy     bool
	stored   *IdempotentAnswer
	rendered *IdempotentAnswer
}

// Rendered is the answer Render gave the create, which its row stores:
// sent as it is, the first answer is the replays' byte for byte, and is
// not rendered twice. Nil until the create has rendered it.
func (k *KeyedCreate) Rendered() *IdempotentAnswer { return k.rendered }

// KeyedCreateOf returns the KeyedCreate ctx carries, or nil.
func KeyedCreateOf(ctx context.Context) *KeyedCreate {
	k, _ := ctx.Value(keyedCreateKey{}).(*KeyedCreate)
	return k
}

// Taken reports whether a create took k: its answer is stored when the
// create succeeded.
func (k *KeyedCreate) Taken() bool { return k.taken }

// Busy reports whether the create found the key held by another request,
// and created nothing.
func (k *KeyedCreate) Busy() bool { return k.busy }

// Stored is the answer found under the key, which the create did not
// make again; nil when there was none.
func (k *KeyedCreate) Stored() *IdempotentAnswer { return k.stored }

type keyedCreateKey struct{}

// WithKeyedCreate returns ctx carrying k for the record create made with
// it.
func WithKeyedCreate(ctx context.Context, k *KeyedCreate) context.Context {
	return context.WithValue(ctx, keyedCreateKey{}, k)
}

// takeKeyedCreate returns the KeyedCreate ctx carries, once: in a
// transaction of Atomically's the answer is stored by its caller.
func takeKeyedCreate(ctx context.Context) *KeyedCreate {
	k := KeyedCreateOf(ctx)
	if k == nil || k.taken || InTransaction(ctx) {
		return nil
	}
	k.taken = true
	return k
}

// errKeyAnswered ends a keyed create that found its answer stored: the
// caller replays that answer (KeyedCreate.Stored) and shows no error.
var errKeyAnswered = &Error{Kind: KindConflict, Message: "this Idempotency-Key was answered before"}

// createKeyed inserts r and its events with k's answer, or finds k busy or
// answered.
func (s *Store) createKeyed(ctx context.Context, k *KeyedCreate, r *Record, events []Event) error {
	a, err := k.Render(r)
	if err != nil {
		return err
	}
	k.rendered = &a
	headers, err := json.Marshal(a.Header)
	if err != nil {
		return fmt.Errorf("idempotent answer headers: %w", err)
	}
	ans := keyedAnswer{
		status: a.Status, headers: string(headers),
		sealed: s.box.SealBytes(a.Body, sealLabel(k.KeyID, k.Key)),
	}
	stampTrace(ctx, events)
	if s.dialect == Postgres {
		err = s.createKeyedPG(ctx, k, ans, r, events)
	} else {
		err = s.createKeyedSQLite(ctx, k, ans, r, events)
	}
	switch {
	case err != nil:
		return err
	case k.busy:
		return ErrIdempotencyKeyBusy
	case k.stored != nil:
		return errKeyAnswered
	}
	return nil
}

// keyedAnswer is an answer as its row stores it.
type keyedAnswer struct {
	status          int
	headers, sealed string
}

// createKeyedPG runs keyedCreateSQL, and runs it once more when it could
// not tell: a twin committed its answer after this statement's snapshot
// was taken but before it took the lock, so that the row was not seen
// yet the answer's insert met it. Run again, it sees that row.
func (s *Store) createKeyedPG(ctx context.Context, k *KeyedCreate, a keyedAnswer, r *Record, events []Event) error {
	fields, err := r.Fields.Value()
	if err != nil {
		return err
	}
	custom, err := r.CustomData.Value()
	if err != nil {
		return err
	}
	now := r.CreatedAt
	args := make([]any, 0, 16+9*len(events))
	args = append(args, idemLockName(k.KeyID, k.Key), k.KeyID, k.Key, now.Add(-k.TTL),
		k.Fingerprint, a.status, a.headers, a.sealed, now,
		r.ID, r.TenantID, r.ModuleID, fields, custom, r.Version, s.shard())
	for _, e := range events {
		args = append(args, e.ID, e.TenantID, e.ModuleID, e.RecordID, e.RecordVersion, e.Type, e.Payload, e.OccurredAt, e.TraceParent)
	}
	query := s.keyedCreateQuery(len(events))
	db := s.w.Statement.ConnPool // no session: the statement is the whole write
	for range 2 {
		var (
			locked, made bool
			fp           []byte
			status       sql.NullInt64
			headers      sql.NullString
			body         sql.NullString
		)
		err := db.QueryRowContext(ctx, query, args...).Scan(&locked, &made, &fp, &status, &headers, &body)
		s.observe(query)
		if err != nil {
			return fmt.Errorf("insert keyed record: %w", err)
		}
		switch {
		case !locked:
			k.busy = true
			return nil
		case made:
			return nil
		case status.Valid:
			k.stored, err = s.openAnswer(k.KeyID, k.Key, fp, status, headers, body)
			return err
		}
	}
	// Twice neither made nor found: the key changes hands too fast to
	// tell; the client retries as it would on a busy key.
	k.busy = true
	return nil
}

// keyedCreateQuery is keyedCreateSQL(n), built once for the event counts
// a create has.
func (s *Store) keyedCreateQuery(n int) string {
	if n < len(s.keyedCreateSQL) {
		return s.keyedCreateSQL[n]
	}
	return keyedCreateSQL(n)
}

// keyedCreateSQL is the statement of a keyed record create with n events.
// The lock is taken once (a CTE calling a volatile function is evaluated
// once); the answer's insert comes first and the record's inserts read
// its row, so that an answer's insert that meets a live row (a twin's,
// committed after the snapshot) inserts no record either. Its parameters
// are createKeyedPG's arguments: $1 the lock's name, $2 and $3 the key,
// $4 the oldest time of a live row, $5 to $8 the answer, $9 the time of
// the create, $10 to $15 the record, $16 the count's shard, then nine
// for each event.
func keyedCreateSQL(n int) string {
	var b strings.Builder
	b.WriteString(`WITH l AS (SELECT pg_try_advisory_xact_lock(` + strconv.Itoa(idempotencyLockClass) + `, hashtext(CAST($1 AS text))) AS locked),
	s AS (SELECT i.fingerprint, i.status, i.headers, i.body FROM l JOIN idempotency_keys i
		ON l.locked AND i.key_id = CAST($2 AS text) AND i.idem_key = CAST($3 AS text) AND i.created_at >= CAST($4 AS timestamptz)),
	k AS (INSERT INTO idempotency_keys (key_id, idem_key, fingerprint, status, headers, body, created_at)
		SELECT $2, $3, CAST($5 AS bytea), CAST($6 AS integer), CAST($7 AS text), CAST($8 AS text), CAST($9 AS timestamptz)
		FROM l WHERE l.locked AND NOT EXISTS (SELECT 1 FROM s)
		ON CONFLICT (key_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status,
			headers = excluded.headers, body = excluded.body, created_at = excluded.created_at
		WHERE idempotency_keys.created_at < $4
		RETURNING 1),
	r AS (INSERT INTO records (id, tenant_id, module_id, fields, custom_data, version, created_at, updated_at)
		SELECT CAST($10 AS text), CAST($11 AS text), CAST($12 AS text), CAST($13 AS jsonb), CAST($14 AS jsonb), CAST($15 AS bigint), $9, $9 FROM k
		RETURNING module_id),
	c AS (INSERT INTO module_record_counts (module_id, shard, count) SELECT module_id, CAST($16 AS integer), 1 FROM r
		ON CONFLICT (module_id, shard) DO UPDATE SET count = module_record_counts.count + excluded.count)`)
	if n > 0 {
		b.WriteString(`,
	e AS (INSERT INTO events (id, tenant_id, module_id, record_id, record_version, type, payload, occurred_at, trace_parent)
		SELECT v.* FROM k, (VALUES `)
		p := 16
		for j := range n {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(")
			for c, typ := range []string{"text", "text", "text", "text", "bigint", "text", "text", "timestamptz", "text"} {
				if c > 0 {
					b.WriteString(", ")
				}
				p++
				b.WriteString("CAST($" + strconv.Itoa(p) + " AS " + typ + ")")
			}
			b.WriteString(")")
		}
		b.WriteString(`) AS v)`)
	}
	b.WriteString(`
	SELECT l.locked, EXISTS (SELECT 1 FROM k), s.fingerprint, s.status, s.headers, s.body FROM l LEFT JOIN s ON true`)
	return b.String()
}

// createKeyedSQLite stores the answer and inserts the record in one job
// of the group commit: the answer's insert, which replaces an expired
// row, finds a live one by inserting nothing, and only then is the row
// read. The key's in-process lock is kept, though the single writer would
// order twins anyway: it answers a request that comes while the key's
// first runs busy, as on PostgreSQL and on every other route.
func (s *Store) createKeyedSQLite(ctx context.Context, k *KeyedCreate, a keyedAnswer, r *Record, events []Event) error {
	name := idemLockName(k.KeyID, k.Key)
	if !s.idemHeld.try(name) {
		k.busy = true
		return nil
	}
	defer s.idemHeld.release(name)
	now := r.CreatedAt
	since := now.Add(-k.TTL)
	err := s.write(ctx, func(tx *gormDB) error {
		res, err := s.execWrite(tx, saveAnswer, k.KeyID, k.Key, k.Fingerprint, a.status, a.headers, a.sealed, now, since)
		if err != nil {
			return fmt.Errorf("save idempotent answer: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return fmt.Errorf("save idempotent answer: %w", err)
			}
			a, err := s.scanClaim(s.queryRow(tx, readAnswer, k.KeyID, k.Key, since), k.KeyID, k.Key)
			if err != nil {
				return err
			}
			k.stored = a
			return errKeyAnswered // nothing was written; the job is undone
		}
		return s.insertRecordTx(tx, r, events)
	})
	if errors.Is(err, errKeyAnswered) {
		if k.stored == nil {
			// Replaced between the insert and the read: cannot be, the
			// writer being single; answered busy all the same.
			k.busy = true
		}
		return nil
	}
	return err
}
