// Package models is recordhub's storage: the entities (GORM structs), their
// validation, the error model, secret hashing and encryption, and the
// [Store], through which every query runs. It imports package migrations
// only.
//
// # The store
//
// Every query is a method of *Store, ctx first; nothing else opens the
// database. A package that uses the store declares the interface it needs
// where it uses it, and *Store satisfies it. Tests open migrated stores on
// both databases with models/storetest, and wait on a condition with its
// Eventually, never a sleep.
//
// Errors follow one model: an [*Error] has a [Kind], which the API maps to
// an HTTP status in one table, and a Message safe to show callers.
// [ErrNotFound] answers a missing row and another tenant's alike. Any other
// error is internal: wrapped with %w, logged, never shown. [IsUnavailable]
// tells an outage (the database unreachable, or locked past its busy
// timeout) from a refused statement; [ErrUnavailable] tells the caller to
// retry.
//
// # Two dialects
//
// [OpenSQLite] (the embedded, single-node mode) and [OpenPostgres]
// (production, several replicas on one database) return the same Store.
// Where the dialects differ the store branches on its [Dialect]: queries
// are written with ? placeholders, bound to $n on PostgreSQL; a record
// create is one statement of CTEs on PostgreSQL, a short transaction on
// SQLite, which runs in process. Times are written in UTC, since SQLite
// compares them as text. Every storage test runs on both
// (storetest.Dialects).
//
// On SQLite (WAL mode) writes go through one connection, so that writers
// queue in Go instead of spinning on SQLITE_BUSY, and are group-committed
// (below); reads use a pool of their own. On PostgreSQL one pool serves
// both, and per-module record counters are spread over rows so that
// concurrent writers do not queue on one row lock. On both, the reads whose
// cost grows with a tenant's history run on a small read-only pool of their
// own when their context is marked with [HeavyRead], so that one tenant's
// burst queues behind itself and not in front of everyone else's calls.
//
// # Migrations
//
// The schema is goose SQL in migrations/postgres and migrations/sqlite,
// under the same numbers, each file written for its dialect, applied by
// [Store.Migrate] at start or by recordhub migrate. A change is a new file
// with the next number in both directories; a released file is never
// changed, since databases have applied it. Prefer changes SQLite makes in
// place: some (a column made nullable) rebuild the whole table there.
//
// # Sealed secrets and hashed keys
//
// API keys are random 256-bit secrets stored only as a SHA-256 hash
// ([HashAPIKey]) with a short visible prefix; lookups go by hash, compare in
// constant time, and a secret is shown once. An inbound webhook's token is
// found the same way, by its hash. Secrets recordhub must use in clear
// (endpoint signing secrets and custom headers, inbound tokens and secrets,
// tenants' AI keys) are sealed with [SecretBox], AES-256-GCM under
// RECORDHUB_SECRET_KEY, whose additional data binds each value to its row
// ("webhook-secret:" and the endpoint's id, for one), so that a sealed value
// copied to another row does not open. The store opens them only for the
// code that needs them ([Store.EndpointSecrets] for the attempt); the API
// shows them only at creation and on the routes that exist to read them.
//
// # Bounds
//
// bounds.go holds every bound on what the API stores, checked where the
// value comes in and refused with a 422 naming the field and the bound, on
// both databases; api/openapi.yaml states them on each property. Text that
// comes from outside rather than as data (a request path, a receiver's
// answer, an inbound call) is not refused but made storable as its row is
// written ([StorableText]: valid UTF-8, no NUL, bounded), since PostgreSQL
// refuses the rest and would lose the row with it.
//
// # The outbox and its notify
//
// A record change writes its [Event] rows in the transaction of the change;
// an event's Payload is the exact body every delivery of it sends.
// Dispatchers claim pending events for a lease ([Store.ClaimEvents]),
// fairly between tenants and a record's events in version order, and mark
// them dispatched once their deliveries started. After a commit that wrote
// events the store wakes this process's dispatcher ([Store.EventWake]) and,
// on PostgreSQL with Options.AnnounceEvents, has one goroutine send a
// NOTIFY on its own connection, coalescing the commits that arrive
// meanwhile; other processes' [Store.ListenEvents] turns it into a wake-up
// (outbox_notify.go). The NOTIFY is never sent in the writing transaction:
// PostgreSQL holds one server-wide lock from a notifying transaction's
// pre-commit to its end, which would serialise every commit that writes
// events. A lost notification costs latency only: dispatchers also poll.
//
// Keys and modules, read on every call, are cached (cache.go). On
// PostgreSQL the transaction that changes one also sends a NOTIFY (such
// writes are rare), on which every replica's [Store.WatchChanges] drops its
// cache; without that feed entries live half a second, so that a revoked
// key stops working everywhere within a second.
//
// # Group commit
//
// On SQLite every commit costs the WAL its own system calls, so writes go
// through one goroutine that runs whatever is waiting in one transaction,
// each write inside a savepoint of its own, so that one write's failure
// undoes only that write (groupcommit.go). Concurrent writers share a
// commit; a lone writer waits for nobody. A write goes through the store's
// write (or writeOne, for a single statement, which on PostgreSQL also
// skips BEGIN and COMMIT), and its function uses only the transaction it is
// given. PostgreSQL groups commits itself.
package models
