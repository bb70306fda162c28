// Package changefeed serves a process's live readers of modules' change
// feeds (the API's text/event-stream answer of GET
// /api/modules/{id}/changes) from one shared reader per module.
//
// A module's hub is created with its first subscription and stopped with
// its last. It reads the module's new changes once per wake-up — the
// store's ChangesWake, which this process's commits and, on PostgreSQL,
// other processes' NOTIFYs close, and a short poll, since a change the
// store holds back behind a transaction still open needs a later look —
// and keeps the newest ones in a bounded ring that every subscription of
// the module reads. So the database sees one query per module per wake-up,
// whatever the number of readers. A subscription behind the ring (a slow
// reader, or one that resumed from an old cursor) reads the store by pages
// until it reaches the ring; nothing it is sent is held for it, so a slow
// reader costs no memory, and the hub never waits for one: the writer of
// the stream bounds how long a write may block and cuts the reader off
// past it.
//
// Subscriptions are bounded per API key and per tenant in this process;
// Close ends every one of them (a graceful shutdown), and their readers
// resume elsewhere from the last cursor they were sent.
package changefeed
