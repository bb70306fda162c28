// Package workflows delivers recordhub's outbound webhooks with Temporal:
// the delivery workflow with its typed input and output, the workflow ids
// derived from business keys, the task queue and the retry schedule, the
// per-record sequencer, the recovery, resync and purge workflows, and the
// client side that starts deliveries (the outbox dispatcher, replays).
// Package activities makes the attempts; package models holds the outbox
// and the attempts' rows.
//
// Workflow code never touches the database, the network, the clock or
// randomness: it passes ids and small structs to activities, which read the
// event and the endpoint themselves.
//
// # The life of a delivery
//
//  1. A record change (an API call, an inbound webhook) writes its events to
//     the outbox, the events table, in the change's own transaction.
//  2. The [Dispatcher] (dispatcher.go), one per worker process, claims
//     pending events for a lease, fairly between tenants, and starts one
//     WebhookDelivery workflow per event and subscribed endpoint, with the
//     id webhook-delivery/<event>/<endpoint> ([WorkflowID]) and the tenant
//     as Temporal's fairness key. A disabled endpoint gets a skipped row
//     instead (error endpoint_disabled), for a later recovery to send. An
//     event is marked dispatched once all its deliveries started; until
//     then it stays pending and is claimed again.
//  3. [WebhookDelivery] makes the first attempt as a local activity, inside
//     the workflow task that starts the execution: most deliveries succeed
//     there, in one workflow task. A first attempt that failed and may be
//     retried waits on a durable timer (the schedule's delay, or the
//     receiver's Retry-After); attempts 2 and later are the Attempt
//     activity, whose Temporal retry policy continues the same schedule up
//     to the endpoint's retry_max. The schedule (RECORDHUB_WEBHOOK_*) comes
//     in the workflow's input, so the workflow reads no configuration. When
//     the tenant's local attempts in flight in that worker are at their
//     bound, the first attempt is deferred to the activity, nothing sent.
//  4. The delivery settles: it completes with the successful attempt's
//     outcome, or fails with an error of type [DeliveryFailedErrorType]
//     whose details hold the last attempt's, so that the Temporal UI shows
//     undelivered webhooks as Failed. A last attempt that was lost (timed
//     out with no outcome) is first settled by the SettleDelivery activity.
//  5. For an endpoint whose ordering is "record" the dispatcher starts
//     nothing itself: it signals the delivery to the record's sequencer,
//     [RecordSequence] (webhook-sequence/<endpoint>/<record>), which runs
//     each delivery as a child WebhookDelivery with the same id as above,
//     one at a time, in the record's version order. A failing delivery
//     holds back that record's later ones to that endpoint until it is
//     delivered or given up; other records have their own sequencers.
//  6. Replays, recoveries and resyncs are new executions, never a rerun of
//     an old one. A replay's id ends in /replay-<n> ([ReplayWorkflowID]), n
//     reserved in the store, and its attempts carry replay_of. A recovery
//     (Recovery) pages through an endpoint's failed deliveries in a window
//     and starts one replay per event; a resync (Resync) pages through the
//     endpoint's records and starts one delivery per record_snapshot event.
//     Both record their progress in the store after each page and continue
//     as new so that their histories stay short.
//  7. Retention: the Temporal Schedule recordhub-purge (one per task queue,
//     see [PurgeScheduleIDFor]), which worker processes create at start,
//     starts the Purge workflow hourly: one Purge activity per kind of row.
//     Pending outbox events are never purged.
//
// # What keeps a webhook from being lost or sent twice
//
//   - The outbox is written in the change's transaction: no committed change
//     without its events, no event without its change.
//   - Every step after the commit may be repeated without harm. Workflow ids
//     are derived from business keys and started with a reuse policy that
//     refuses a used id, so a start repeated after a crash between the start
//     and the marking of the event, after a lease ran out, or by a second
//     dispatcher is refused by Temporal and counts as done. So are a
//     sequencer's repeated signals and a recovery's or resync's page retried
//     after its worker died.
//   - Each attempt's row is written before its request leaves (in_flight,
//     with the request as it will be sent) and completed with the outcome
//     after; when the in-flight row cannot be written, nothing is sent.
//   - Attempt numbers count across the local first attempt and the activity
//     that follows it. A row left in flight by a lost worker becomes
//     worker_lost when the next attempt of the run writes its row. A local
//     first attempt run again because its workflow task timed out takes the
//     number after its run's rows, so a run's rows keep distinct, increasing
//     numbers; a replay is a run of its own, numbered from 1.
//   - A lost last attempt has no next attempt to mark it: the workflow runs
//     SettleDelivery, which marks the run's rows still in flight worker_lost
//     and counts the failed delivery in the endpoint's health, once however
//     often Temporal retries it.
//   - What may still reach a receiver twice is a request whose outcome was
//     lost. Every attempt, replay and recovery of an event carries the same
//     Standard Webhooks webhook-id (X-Webhook-Id), the event id, and
//     receivers dedupe on it; the receiver's side is in api/README.md.
//
// # Changing a workflow safely
//
// A delivery can live for about a day (its retry timers are in it), so
// every deploy meets running executions, and new code must replay their
// histories exactly.
//
// Names are pinned. register.go registers every workflow and activity under
// a constant ([DeliveryWorkflowName] "WebhookDelivery", [AttemptActivityName]
// "Attempt", [RecordSequenceWorkflowName], ...), never by Go identifier, and
// the worker sets the SDK's DisableRegistrationAliasing, so that renaming a
// function changes nothing and no function's name stands for a pinned one.
// A pinned name never changes, and no Go function is named after another
// type's pinned name. Inputs and outputs may gain fields whose zero value
// keeps today's behaviour; no field is removed or changes meaning while
// executions that carry it may run.
//
// A change that adds, removes or reorders a command (an activity, a local
// activity, a timer, a child, continue-as-new) takes one of two ways:
//
//   - workflow.GetVersion around it: executions started before the change
//     answer workflow.DefaultVersion when replayed, and each new execution
//     pays a marker and a search-attribute upsert in its history.
//     RecordSequence, Recovery, Resync and Purge change this way;
//     WebhookDelivery asks its one GetVersion only on the rare deferred
//     first attempt, so that a delivery accepted at once stays six history
//     events.
//   - A new workflow type: new executions start under a new pinned name
//     whose code has no version branch, and the old name stays registered
//     with its code while its executions may run. A worker that does not
//     know a type refuses its tasks and Temporal hands them to one that
//     does, so a new type is never run the old way; upgrade workers before
//     API replicas, which start replays and recoveries.
//
// A flag in the input is not a third way: a worker older than the flag
// ignores it and would run a new execution the old way.
//
// testdata/*.json are recorded histories, one per way each workflow ends.
// TestReplayRecordedHistories (histories_test.go) replays each with the
// worker's registration and checks that its type is a pinned name, so a
// change that would break running executions fails there. A new code path
// gets a history of its own: add a case to historyCases with a new file
// name and run
//
//	RECORDHUB_RECORD_HISTORIES=1 go test ./workflows -run TestRecordHistories -count=1 -v
//
// which runs the real workflow on an in-process Temporal server and writes
// only files that do not exist yet. Never re-record an existing file: it
// stands for executions that may still be running.
//
// make lint runs Temporal's workflowcheck on ./workflows/...: no clock,
// randomness, map iteration or goroutine in workflow code. Tracing is the
// client's interceptor, headers and spans and never commands, so histories
// replay with tracing on or off; keep it so.
//
// # Compatibility between releases
//
// A release keeps running the executions the previous release started:
// 0.4.0 runs those that 0.3.x started. Code kept only for executions older
// than that (an old workflow type, a GetVersion branch) is removed, together
// with their recorded histories. An operator therefore upgrades one release
// at a time, letting the executions the older release started run on the
// newer one; skipping a release could leave executions whose code is gone,
// whose workflow tasks then fail until a worker that has it runs them.
package workflows
