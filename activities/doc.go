// Package activities holds the side effects of recordhub's workflows: one
// outbound webhook delivery attempt with its signing and egress guard, the
// settle step of a lost last attempt, the pages of recoveries and resyncs,
// and the retention purge.
// Dependencies live on structs built in cmd (a [Deliverer] holds the store,
// the SSRF-safe HTTP client and the clock); package workflows registers
// their methods with the worker under pinned names. This package imports
// models only.
//
// # The attempt
//
// [Deliverer.Attempt] (deliverer.go) sends one event to one endpoint once
// and leaves one webhook_deliveries row, whatever happens. The delivery
// workflow runs it as its first attempt (a local activity) and as the
// Attempt activity for the rest; [AttemptInput] says which attempt number
// the activity starts at and how many attempts the delivery allows. Its
// JSON names are pinned: running workflows hold them. In order, it
//
//  1. reads the event and the endpoint in one statement: a missing event,
//     a missing or disabled endpoint ends the delivery, nothing sent;
//  2. builds the request: the stored payload byte for byte as the body,
//     the endpoint's custom headers, then recordhub's own headers and
//     signatures, which custom headers cannot replace
//     ([models.ReservedHeader]);
//  3. writes the row in flight (error in_flight) with the request as it
//     will be sent, custom header values masked; when that write fails,
//     nothing is sent and the attempt is retried;
//  4. sends the request within the attempt timeout, keeping the status,
//     the headers, the first 4 KiB of the body and the timings of DNS,
//     connect, TLS and first byte;
//  5. writes the outcome into the same row, by its id, even when the
//     activity's context is done (its deadline may be the very timeout
//     that failed the attempt). An attempt that ends its delivery writes
//     the outcome and the endpoint's health in one transaction.
//
// An attempt that sends nothing (a blocked destination, a gone endpoint)
// writes its row once, finished. When the outcome cannot be written the
// attempt fails retryably, even if the receiver accepted it: the next
// attempt sends the same webhook id, on which receivers dedupe.
//
// A row left in flight by a worker that died mid-request becomes
// worker_lost when the next attempt of the same run writes its row
// ([models.Store.InsertAttempt]). The last attempt has no next one: when it
// timed out, the workflow runs [Deliverer.SettleDelivery], which marks the
// run's rows still in flight worker_lost and counts the failed delivery in
// the endpoint's health, once however often it is retried. A local first
// attempt run again after its worker was lost is numbered after its run's
// rows (AttemptInput.Renumber): the lost run may have reached the receiver.
//
// # Outcomes
//
// classify (outcome.go) is the one place where an attempt's error becomes a
// delivery error code for the row (models.DeliveryErr*), a message tenants
// may read, and a Temporal error type:
//
//   - a 2xx answer is a success; a 3xx is not followed, and fails;
//   - another status, a timeout, a DNS, connection or TLS failure is
//     [ErrTypeDeliveryFailed], retried on the delivery's schedule. A
//     Retry-After on a 429 or 503 sets the next retry's delay: never
//     earlier than the schedule, never past its longest interval;
//   - 410 Gone disables the endpoint and ends the delivery
//     ([ErrTypeReceiverGone]);
//   - a token endpoint that refuses the client or cannot be reached is
//     auth_failed, [ErrTypeDeliveryFailed], retried;
//   - a blocked destination, a deleted or disabled endpoint, a vanished
//     event end the delivery (non-retryable: [ErrTypeBlockedDestination],
//     [ErrTypeEndpointGone], [ErrTypeEndpointDisabled], [ErrTypeEventGone]);
//   - recordhub's own failure, the store's, is [ErrTypeStore], retried.
//
// A failed attempt's error carries its [AttemptOutput] in its details, from
// which the workflow learns the attempt's number and outcome. Failures that
// are the receiver's or the tenant's doing are benign errors to the SDK,
// which logs them at debug level, and one WARN line of ours ("webhook
// attempt failed"); recordhub's own are plain errors, which the SDK logs as
// errors: an operator must act. The endpoint's health counts deliveries,
// not attempts, and neither recordhub's own failures nor a gone or disabled
// endpoint count against it.
//
// # Signing
//
// sign.go writes the identity and signature headers. X-Webhook-Id and
// Webhook-Id are the event id, the same for every attempt and replay.
// X-Webhook-Signature is the hex HMAC-SHA256 of the body keyed with the
// secret string; Webhook-Signature is Standard Webhooks' v1 signature of
// "<id>.<timestamp>.<body>", keyed as [models.StandardWebhooksKey] says.
// Both cover the body byte for byte. During a secret rotation's grace
// period the previous secret signs too. These formats are the receiver's
// contract, written in api/README.md: change them only with it.
//
// # The egress guard
//
// guard.go keeps requests off internal networks (SSRF), twice: [CheckURL],
// which the API runs when an endpoint is saved, refuses a URL whose host or
// any address its name resolves to is blocked; the attempt's dialer
// checks every address it actually dials, so a name that later resolves
// elsewhere (DNS rebinding) is refused too. The rules that need no DNS (the
// URL's form, IP literals, odd IPv4 spellings, localhost names) run again
// at each attempt. What is blocked is decided by code.dny.dev/ssrf, from
// the IANA special-purpose registries; RECORDHUB_WEBHOOK_ALLOW_CIDRS
// ([ParseAllowCIDRs]) is the only exemption. The transport never uses a
// proxy: through one, the proxy's address would be what is checked.
//
// # Receiver credentials
//
// An endpoint may carry OAuth2 client credentials and TLS material
// (credentials.go, oauth2.go), opened from the store at each attempt like
// its secret. With TLS material the attempt goes through a client of its
// own: a clone of the guarded transport (same dialer, so the same egress
// checks) with the client certificate and, when given, the CA bundle as
// its only roots; clients are kept per endpoint and configuration in a
// bounded LRU that closes a dropped client's connections. With auth, prepare
// puts an access token in Authorization, from a per-worker cache keyed
// the same way (a PATCH re-seals the configuration, so its hash changes
// and the next attempt asks anew). The token request goes through the
// Deliverer's own guarded client, never following a redirect; concurrent
// attempts of one endpoint wait for one request. A token is used until 30
// s, or a tenth of its lifetime, before the expiry its answer gave (read
// on the Deliverer's clock), so an expired one is never sent. A 401 from
// the receiver drops the token and sends the request once more within the
// same attempt; the row shows the last request. A token request that fails
// becomes an authError: auth_failed with the token endpoint's status and
// answer (the client secret scrubbed from it), or blocked_destination when
// the guard refused its address. authError keeps no link to the library's
// error, whose text may hold the whole answer, so nothing secret reaches
// Temporal's history. Authorization is not one of recordhub's own headers,
// so rows store it masked like a custom header.
//
// # Broker destinations
//
// An endpoint whose url is amqp://, amqps:// or nats:// (see
// [models.BrokerURL]) is published to instead of POSTed to, by the same
// attempt: prepare builds the same request (body, custom headers,
// recordhub's headers and signatures) and picks a broker sender beside the
// HTTP one, and send hands the request to publish (broker.go), which sends
// it as one message: the body, the headers with lower-case names, the event
// id as the message id (AMQP message_id; Nats-Msg-Id, on which JetStream
// dedupes). Rows, throttle, schedule, health, ordering, replays,
// recoveries and resyncs see an attempt like any other; only what success
// means changes. AMQP (broker_amqp.go): a persistent message published
// mandatory on a channel in confirm mode, one message per channel at a
// time, so that the basic.return the broker sends before its ack is that
// message's: an ack is a success, a return or a missing exchange is
// unroutable, a nack broker_refused. JetStream (broker_nats.go): the
// PubAck is the success (its stream and sequence kept as the row's
// response body), no stream for the subject is unroutable.
//
// The URL's password is sealed in the store and the stored URL holds
// [models.URLSecretMask] instead, so everything that shows the URL (rows,
// answers, logs, spans, events) shows it masked; brokerFor opens it with
// [models.Store.EndpointURL] when the attempt dials. The login goes to the
// client libraries as options, never inside a URL that an error could
// quote. Connections live in a per-Deliverer pool, one per broker, login
// and TLS material (a hash of them is the key), at most maxBrokerConns,
// least recently used closed first; a connection found closed is dialled
// again by the next attempt, under a lock of its own so that one attempt
// dials and the others to the same broker wait. Dialling uses the guarded
// dialer (the egress checks of every address) with brokerDialTimeout, so a
// broker that is down fails its attempts in seconds and the schedule takes
// over. NATS connections do not reconnect by themselves: a message is
// never buffered while its broker is away.
//
// # The local-attempt gate
//
// A local first attempt runs inside its workflow task and holds a worker's
// workflow-task slot until the receiver answers. localgate.go bounds each
// tenant's local attempts in flight per worker process
// ([DefaultLocalAttemptsPerTenant], Config.LocalAttemptsPerTenant): past the
// bound the attempt answers [ErrTypeAttemptDeferred] with nothing sent and
// no row written, and the workflow makes it as an activity attempt at once.
// A local attempt run again after a lost worker is never deferred.
//
// # The endpoint's throttle
//
// An endpoint's rate_limit and max_in_flight are held by a [Throttle]
// (package throttle: in process, or on Redis across workers; its package
// comment says why it works as it does). The attempt takes its slot after
// reading the event and the endpoint, before writing its row. A rate's
// slots are send instants evenly spaced: an attempt whose instant is within
// a second (a local attempt: 10 ms) is granted it, writes its row, waits
// in the activity until the instant (throttle.Permit.Wait) and sends. One
// further back is refused: it answers [ErrTypeThrottled] at once with
// nothing sent, no row, no metric but recordhub_webhook_throttled_total,
// and a wait that ends half a second before its place in the endpoint's
// queue as the error's next-retry delay; the workflow waits on a timer, so
// no worker slot is held, then makes the same attempt number again: a
// timer's round trip up to half a second long still brings it before its
// instant, and a longer one costs it nothing but the time. A refusal for
// want of a slot in flight of up to 50 ms is waited out in the activity
// instead (never in a local attempt); the slot in flight is released when
// the request ends, or when its lease does. When the throttle's store
// fails, the attempt fails as the store's failure and is retried: it never
// sends unthrottled.
//
// # Bulk pages and their pace
//
// Recoveries and resyncs run page by page. A page's activity starts
// delivery executions through an interface that package workflows
// implements (this package cannot import it), several at once. A page may
// be retried after its worker died: it reserves the same replay numbers or
// makes the same snapshot event ids, and its starts of executions that
// exist already are refused by Temporal and count once. Pages heartbeat, so
// that a dead worker's page is retried elsewhere soon. pace.go spaces a
// page's starts at the tenant's bulk rate, booked in the database
// ([models.Store.BookBulkStarts]) so that the pace holds across every
// worker; a slot missed is passed over, never made up for by a burst.
//
// # Purge
//
// [Purger.Purge] deletes one kind of row older than the worker's retention,
// a batch per short transaction with a pause between (SQLite has one
// writer), heartbeating its count, within a budget per run; what is left
// waits for the next run. The cutoff is computed here from the worker's
// configuration, never passed in, so that the workflow stays deterministic.
package activities
