package activities

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/activities/throttle"
	"github.com/recordhub/recordhub/models"
)

// Store is what an attempt reads and writes; *models.Store satisfies it.
type Store interface {
	// GetEventAndEndpoint reads the event and the endpoint an attempt
	// sends, in one statement: ErrNotFound and no event when the event is
	// missing, ErrNotFound and the event when only the endpoint is.
	GetEventAndEndpoint(ctx context.Context, tenantID, eventID, endpointID string) (*models.Event, *models.WebhookEndpoint, error)
	EndpointSecrets(e *models.WebhookEndpoint) (current, previous string, err error)
	// EndpointHeaders returns the endpoint's custom headers in clear.
	EndpointHeaders(e *models.WebhookEndpoint) (map[string]string, error)
	// EndpointCredentials returns the endpoint's auth and TLS material in
	// clear, nil for what it has none of.
	EndpointCredentials(e *models.WebhookEndpoint) (*models.EndpointAuth, *models.EndpointTLS, error)
	// EndpointURL returns the endpoint's URL with its login in clear (a
	// broker URL's; e.URL shows it masked).
	EndpointURL(e *models.WebhookEndpoint) (string, error)
	// InsertAttempt writes an attempt's row, in flight before its request
	// is sent or finished when none is sent, and marks the same run's
	// earlier attempts still in flight worker_lost.
	InsertAttempt(ctx context.Context, d *models.WebhookDelivery) error
	// FinishAttempt writes the outcome into a row written in flight.
	FinishAttempt(ctx context.Context, d *models.WebhookDelivery) error
	// FinishDelivery is FinishAttempt for an attempt that ends its
	// delivery, with RecordDeliveryEnd in the same transaction; healthErr
	// is the health's failure alone, which leaves the outcome written.
	FinishDelivery(ctx context.Context, d *models.WebhookDelivery, end models.DeliveryEnd) (healthErr, err error)
	// NextAttempt returns the number after the highest attempt of a
	// workflow run's rows (1 when it has none).
	NextAttempt(ctx context.Context, eventID, endpointID, workflowID, runID string) (int, error)
	// SettleLostAttempts marks a run's rows still in flight worker_lost
	// and returns how many it changed.
	SettleLostAttempts(ctx context.Context, eventID, endpointID, workflowID, runID string, at time.Time) (int64, error)
	// DisableEndpoint disables an endpoint whose receiver answered 410 Gone.
	DisableEndpoint(ctx context.Context, tenantID, id string) error
	// SnapshotSuperseded reports whether a record_snapshot event need not
	// be sent to an endpoint: a later live event of its record was
	// committed since its resync began.
	SnapshotSuperseded(ctx context.Context, ev *models.Event, ep *models.WebhookEndpoint) (bool, error)
	// RecordDeliveryEnd updates the endpoint's health when a delivery
	// ends, and disables it when it has failed for disableAfter (0: never).
	RecordDeliveryEnd(ctx context.Context, tenantID, id string, succeeded bool, now time.Time, disableAfter time.Duration) error
}

// DefaultDisableAfter is how long an endpoint's deliveries may all fail
// before it is disabled (RECORDHUB_ENDPOINT_DISABLE_AFTER).
const DefaultDisableAfter = 120 * time.Hour

// Config configures a Deliverer.
type Config struct {
	// Schedule is the delivery schedule (RECORDHUB_WEBHOOK_*), the one the
	// workflows carry; its zero fields take the defaults. Its
	// AttemptTimeout bounds one attempt (the activity's
	// StartToCloseTimeout should leave room beyond it for the row to be
	// written); its delays place a receiver's Retry-After only when the
	// activity's info carries no retry policy (older servers, the SDK's
	// test environment).
	Schedule Schedule
	// AllowCIDRs are exempted from the block list
	// (RECORDHUB_WEBHOOK_ALLOW_CIDRS, see ParseAllowCIDRs); the only
	// exemption there is.
	AllowCIDRs []netip.Prefix
	// Version goes into User-Agent: recordhub-webhooks/<version>; empty
	// means "dev".
	Version string
	// Now is the clock of timestamps and rows; nil means time.Now.
	Now func() time.Time
	// Metrics, when set, counts attempts.
	Metrics *Metrics
	// Resolver resolves receivers' names when dialling; nil means
	// net.DefaultResolver.
	Resolver *net.Resolver
	// DisableAfter: an endpoint whose deliveries have all failed for this
	// long, at least models.DisableAfterFailures of them, is disabled
	// (RECORDHUB_ENDPOINT_DISABLE_AFTER); zero never disables. Callers pass
	// DefaultDisableAfter for the default.
	DisableAfter time.Duration
	// TracerProvider, when set, gives every request sent a client span and
	// a traceparent header (through Propagator, W3C Trace Context when
	// nil); nil sends neither.
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	// Logger gets one WARN line per failed attempt that is the receiver's
	// or the tenant's doing, and an ERROR line when the endpoint's health
	// cannot be recorded; nil logs nothing.
	Logger *slog.Logger
	// LocalAttemptsPerTenant bounds a tenant's local first attempts in
	// flight in this process (DefaultLocalAttemptsPerTenant when zero);
	// past it a first attempt is deferred to an attempt activity.
	LocalAttemptsPerTenant int
	// Throttle holds endpoints' throttles; nil holds them in this process
	// only (throttle.NewMemory).
	Throttle Throttle
}

// Deliverer makes delivery attempts. Register it with the Temporal worker;
// its only exported methods are the Attempt activity and SettleDelivery,
// which ends a delivery whose last attempt was lost, so registering the
// struct registers nothing else. It is safe for concurrent use, and keeps
// connections to receivers open between attempts.
type Deliverer struct {
	store     Store
	client    *http.Client
	transport *http.Transport
	egress    *egress
	userAgent string
	now       func() time.Time
	metrics   *Metrics
	// schedule is Config.Schedule, with its defaults.
	schedule Schedule
	// disableAfter: see Config.DisableAfter.
	disableAfter time.Duration
	// tracing is nil when tracing is off.
	tracing *tracing
	log     *slog.Logger
	// local bounds each tenant's local first attempts in flight.
	local *localGate
	// tokens and tlsClients hold endpoints' access tokens and clients
	// with TLS material (see credentials.go); tokenRequests counts the
	// token requests made.
	tokens        *lru[*cachedToken]
	tlsClients    *lru[*http.Client]
	tokenRequests atomic.Int64
	// throttle holds endpoints' rate_limit and max_in_flight.
	throttle Throttle
	// dialer is the guarded dialer, which broker connections use too;
	// brokers holds them (see broker.go).
	dialer  *net.Dialer
	brokers *brokerPool
}

// NewDeliverer returns a Deliverer that reads and writes through store.
func NewDeliverer(store Store, cfg Config) (*Deliverer, error) {
	if store == nil {
		return nil, errors.New("activities: a store is required")
	}
	if cfg.Schedule.AttemptTimeout < 0 {
		return nil, fmt.Errorf("activities: webhook timeout %s is negative", cfg.Schedule.AttemptTimeout)
	}
	cfg.Schedule = cfg.Schedule.WithDefaults()
	for _, p := range cfg.AllowCIDRs {
		if !p.IsValid() {
			return nil, fmt.Errorf("activities: allowed network %v is not valid", p)
		}
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DisableAfter < 0 {
		return nil, fmt.Errorf("activities: endpoint disable window %s is negative", cfg.DisableAfter)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Throttle == nil {
		cfg.Throttle = throttle.NewMemory(nil)
	}
	eg := newEgress(cfg.AllowCIDRs)
	dialer := &net.Dialer{
		Timeout:   cfg.Schedule.AttemptTimeout,
		KeepAlive: 30 * time.Second,
		Resolver:  cfg.Resolver,
		Control:   eg.control,
	}
	transport := &http.Transport{
		// No proxy, ever: through one, the proxy's address is what is
		// dialled and checked, not the receiver's.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// Without Accept-Encoding the stored headers are exactly those
		// sent, and the stored body is what the receiver wrote.
		DisableCompression: true,
		TLSClientConfig:    &tls.Config{MinVersion: tls.VersionTLS12},
	}
	return &Deliverer{
		store: store,
		client: &http.Client{
			Transport: transport,
			// A 3xx is a failure, not followed: following it could lead anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		transport: transport,
		egress:    eg,
		userAgent: "recordhub-webhooks/" + cfg.Version,
		now:       cfg.Now,
		metrics:   cfg.Metrics,
		schedule:  cfg.Schedule,

		disableAfter: cfg.DisableAfter,
		tracing:      newTracing(cfg.TracerProvider, cfg.Propagator),
		log:          cfg.Logger,
		local:        newLocalGate(cfg.LocalAttemptsPerTenant),
		tokens:       newLRU[*cachedToken](maxCachedTokens, nil),
		tlsClients:   newLRU(maxCachedTLSClients, closeIdle),
		throttle:     cfg.Throttle,
		dialer:       dialer,
		brokers:      newBrokerPool(maxBrokerConns),
	}, nil
}

// AttemptInput names the delivery an attempt belongs to.
//
// Its JSON names are pinned to the field names encoding/json gave it before
// it had tags: attempts scheduled by running workflows hold them, so a
// renamed field must keep its tag.
type AttemptInput struct {
	TenantID   string `json:"TenantID"`
	EventID    string `json:"EventID"`
	EndpointID string `json:"EndpointID"`
	// ReplayOf is the delivery id a replay was started from; "" otherwise.
	ReplayOf string `json:"ReplayOf"`
	// FirstAttempt is the delivery attempt number of the activity's first
	// Temporal attempt; each retry adds one. 0 means 1, as for every
	// activity scheduled before the field existed. A delivery whose first
	// attempt ran as a local activity goes on with an activity whose
	// FirstAttempt is the next number, so that rows and X-Webhook-Attempt
	// count on across both.
	FirstAttempt int `json:"FirstAttempt,omitempty"`
	// RetryMax, when above 0, is the delivery's attempts in all: the
	// attempt numbered RetryMax or more is the last, the one that counts a
	// failure in the endpoint's health. A local attempt carries it, since
	// its own retry policy allows it one attempt whatever the delivery
	// allows; without it the activity's retry policy tells.
	RetryMax int `json:"RetryMax,omitempty"`
	// Renumber numbers the attempt one past the highest of its run's rows
	// (at least FirstAttempt): a local attempt that may be running again
	// after its worker was lost mid-attempt. Temporal starts a local
	// activity run again from attempt 1, while the lost run may have
	// written its row and reached the receiver; the new number makes that
	// row worker_lost and counts it as one of the delivery's attempts.
	Renumber bool `json:"Renumber,omitempty"`
	// Throttled: the attempt was throttled before (ErrTypeThrottled) and
	// comes back at the time its wait said; it keeps its place in the
	// endpoint's queue.
	Throttled bool `json:"Throttled,omitempty"`
}

// AttemptOutput reports an attempt. A successful Attempt returns it; a
// failed one returns an error whose details hold it (see ErrTypeDeliveryFailed).
// Its JSON names are pinned like AttemptInput's.
type AttemptOutput struct {
	// DeliveryID is the attempt's webhook_deliveries row; "" when its
	// in-flight row could not be written (and nothing was sent).
	DeliveryID string `json:"DeliveryID"`
	Attempt    int    `json:"Attempt"`
	// StatusCode is the receiver's HTTP status; 0 when there was none.
	StatusCode int `json:"StatusCode"`
	// Error is the delivery error code; "" on success.
	Error string `json:"Error"`
}

// Attempt is the delivery activity: it sends the event to the endpoint once
// and leaves one webhook_deliveries row, whatever happens. A 2xx returns
// nil. Other answers and network failures return a retryable
// ErrTypeDeliveryFailed error, so Temporal retries; a blocked destination
// and a deleted or disabled endpoint (or a vanished event) return
// non-retryable errors.
//
// Every attempt that may reach the receiver has its row even if the worker
// dies mid-request: the row is written in flight, with the
// request as it will be sent, before the request leaves, and updated by its
// id with the outcome after; the next attempt of the run marks a row left
// in flight worker_lost. That costs one INSERT and one UPDATE by primary key
// per attempt that sends; an attempt that sends nothing writes its row once.
// When the in-flight row cannot be written nothing is sent; when the outcome
// cannot be written, even after the receiver accepted the event: both
// return a retryable ErrTypeStore error, and receivers dedupe on
// X-Webhook-Id.
//
// Numbering: the attempt's number, in its row and X-Webhook-Attempt, is
// the delivery's, counted across the local first attempt and the activity
// that follows it (see AttemptInput.FirstAttempt); a local attempt run
// again after a lost worker is numbered after its run's rows (Renumber).
//
// Receivers' hints: a Retry-After on a 429 or 503 sets the
// error's next-retry delay (see nextDelay), so the next attempt is still
// the same activity's next attempt; a 410 Gone disables the endpoint and
// returns a non-retryable ErrTypeReceiverGone error.
//
// Logs: a failed attempt that is the receiver's or the tenant's doing
// logs one WARN line (see logFailure) and returns a benign error, which
// the SDK does not log as an error; a store failure returns a plain error,
// which the SDK logs as one: ERROR means an operator must act.
func (d *Deliverer) Attempt(ctx context.Context, in AttemptInput) (AttemptOutput, error) {
	info := attemptInfo(ctx, in)
	if info.local && !in.Renumber {
		// A local attempt holds its workflow task, and so a worker slot,
		// while it waits for the receiver: a tenant has a bounded number.
		// (One run again after a lost worker is never deferred: the
		// activity would number it 1, and attempt 1 may have been sent.)
		if !d.local.enter(in.TenantID) {
			return AttemptOutput{}, temporal.NewApplicationErrorWithOptions(
				"the tenant's local first attempts in flight in this worker are at their bound; the attempt is made as an activity",
				ErrTypeAttemptDeferred, temporal.ApplicationErrorOptions{NonRetryable: true, Category: temporal.ApplicationErrorCategoryBenign})
		}
		defer d.local.leave(in.TenantID)
	}
	begin := time.Now()
	if in.Renumber && info.workflowID != "" {
		n, err := d.store.NextAttempt(ctx, in.EventID, in.EndpointID, info.workflowID, info.runID)
		if err != nil {
			// Nothing was written or sent: as when the in-flight row fails.
			d.metrics.observe(DeliveryErrInternal, time.Since(begin))
			out := AttemptOutput{Attempt: info.attempt, Error: DeliveryErrInternal}
			return out, temporal.NewApplicationErrorWithCause("number the delivery attempt: "+err.Error(), ErrTypeStore, err, out)
		}
		info.renumber(n)
	}
	row := &models.WebhookDelivery{
		ID:       models.NewID(models.PrefixDelivery),
		TenantID: in.TenantID, EventID: in.EventID, EndpointID: in.EndpointID,
		WorkflowID: info.workflowID, RunID: info.runID, Attempt: info.attempt,
		RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{},
		StartedAt: d.now(),
	}
	if in.ReplayOf != "" {
		replayOf := in.ReplayOf
		row.ReplayOf = &replayOf
	}
	req, snd, limits, f := d.prepare(ctx, in, info.attempt, row)
	if f != nil && f.code == models.DeliveryErrSuperseded {
		return d.superseded(ctx, row)
	}
	inFlight := f == nil
	// The endpoint's throttle: after everything that may end the attempt
	// with nothing to send, before its row, so that an attempt refused a
	// slot leaves no trace but a timer in the workflow.
	var permit *throttle.Permit
	if inFlight && limits.Limited() {
		var err error
		if permit, err = d.acquire(ctx, in, info, limits); permit == nil {
			var appErr *temporal.ApplicationError
			if errors.As(err, &appErr) && appErr.Type() == ErrTypeThrottled {
				return AttemptOutput{Attempt: info.attempt}, err
			}
			// Nothing was written or sent: as when the in-flight row fails.
			d.metrics.observe(DeliveryErrInternal, time.Since(begin))
			out := AttemptOutput{Attempt: info.attempt, Error: DeliveryErrInternal}
			return out, temporal.NewApplicationErrorWithCause("take the endpoint's throttle slot: "+err.Error(), ErrTypeStore, err, out)
		}
	}
	var span trace.Span
	if inFlight && d.tracing != nil {
		req, span = d.tracing.start(req, in, info.attempt, snd.broker)
		row.RequestHeaders = snd.headersOf(req)
	}
	if inFlight {
		if err := d.insertInFlight(ctx, row); err != nil {
			if span != nil {
				span.End() // nothing was sent
			}
			permit.Release()
			d.metrics.observe(DeliveryErrInternal, time.Since(begin))
			out := AttemptOutput{Attempt: row.Attempt, Error: DeliveryErrInternal}
			return out, temporal.NewApplicationErrorWithCause("record delivery attempt before sending: "+err.Error(), ErrTypeStore, err, out)
		}
		// The row's write is done before the slot's instant, not after
		// it. When the slot cannot be waited for (ctx ended, or the
		// throttle's store failed counting the send), nothing is sent: the
		// attempt fails as recordhub's own error, and is retried.
		if err := permit.Wait(ctx); err != nil {
			f = d.fail(row, &internalError{"wait for the endpoint's throttle slot", err}, false, nil)
		} else {
			f = d.send(d.countOnWrite(req.Context(), permit), &snd, req, row)
		}
		permit.Release()
	}
	if span != nil {
		d.tracing.end(span, row, f)
	}
	row.Succeeded = f == nil
	row.FinishedAt = d.now()
	row.DurationMS = ms(time.Since(begin))

	out := AttemptOutput{DeliveryID: row.ID, Attempt: row.Attempt, Error: row.Error}
	if row.ResponseStatus != nil {
		out.StatusCode = *row.ResponseStatus
	}
	outcome := outcomeSuccess
	if f != nil {
		outcome = f.code
	}
	d.metrics.observe(outcome, time.Since(begin))

	// The row is written even when the activity's context is done: its
	// deadline may be the very timeout that failed the attempt.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// last: no attempt of this delivery follows this failed one.
	last := f != nil && (!f.retry || info.last())
	// ends: the delivery ends here, and its end counts in the endpoint's
	// health (which counts deliveries, not attempts).
	ends := f == nil || (f.counts() && last)
	var healthErr error
	switch {
	case inFlight && ends:
		// The outcome and the health in one transaction.
		var err error
		healthErr, err = d.store.FinishDelivery(wctx, row, models.DeliveryEnd{Succeeded: f == nil, At: d.now(), DisableAfter: d.disableAfter})
		if err != nil {
			return out, temporal.NewApplicationErrorWithCause("record delivery attempt: "+err.Error(), ErrTypeStore, err, out)
		}
	default:
		write := d.store.InsertAttempt
		if inFlight {
			write = d.store.FinishAttempt
		}
		if err := write(wctx, row); err != nil {
			return out, temporal.NewApplicationErrorWithCause("record delivery attempt: "+err.Error(), ErrTypeStore, err, out)
		}
		if ends {
			healthErr = d.store.RecordDeliveryEnd(wctx, in.TenantID, in.EndpointID, f == nil, d.now(), d.disableAfter)
		}
	}
	// Best effort: failing the attempt for the health would send a success
	// again, or retry a delivery that is over. Logged as an error: the
	// store failed, and the endpoint's health misses this delivery.
	if healthErr != nil {
		d.log.ErrorContext(ctx, "record endpoint health", "tenant_id", in.TenantID, "endpoint_id", in.EndpointID, "event_id", in.EventID, "error", healthErr)
	}
	if f != nil && f.disable {
		// After the row: should this fail, the retry finds the endpoint
		// still enabled, is answered 410 again and disables it then.
		if err := d.store.DisableEndpoint(wctx, in.TenantID, in.EndpointID); err != nil && !errors.Is(err, models.ErrNotFound) {
			return out, temporal.NewApplicationErrorWithCause("disable the endpoint after 410 Gone: "+err.Error(), ErrTypeStore, err, out)
		}
	}
	if f == nil {
		return out, nil
	}
	opts := temporal.ApplicationErrorOptions{NonRetryable: !f.retry, Cause: f.cause, Details: []any{out}}
	if f.retry && f.retryAfter > 0 {
		opts.NextRetryDelay = d.nextDelay(info, f.retryAfter)
	}
	if f.expected() {
		// The receiver's doing or the tenant's, which no operator needs to
		// act on: one WARN line of ours, and a benign error, which the SDK
		// logs at DEBUG instead of ERROR and does not count as a failed
		// activity. recordhub's own failures stay plain errors: the SDK
		// logs them as errors, with the workflow id that names the event
		// and the endpoint.
		opts.Category = temporal.ApplicationErrorCategoryBenign
		var next time.Duration
		if !last {
			next = opts.NextRetryDelay
			if next == 0 {
				next = d.nextDelay(info, 0)
			}
		}
		d.logFailure(ctx, in, info, row, f, next)
	}
	return out, temporal.NewApplicationErrorWithOptions(f.message, f.errType, opts)
}

// superseded ends the delivery of a snapshot that a later live event of its
// record overtook, with nothing sent: one row, attempt 0 (no request, like
// a skipped delivery's), counted as succeeded, so that the delivery is
// done, recoveries leave it alone and the endpoint's health and stats do
// not count it.
func (d *Deliverer) superseded(ctx context.Context, row *models.WebhookDelivery) (AttemptOutput, error) {
	row.Attempt, row.Succeeded = 0, true
	row.FinishedAt = d.now()
	row.RequestHeaders, row.RequestBody = models.Headers{}, ""
	out := AttemptOutput{DeliveryID: row.ID, Error: row.Error}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.store.InsertAttempt(wctx, row); err != nil {
		return out, temporal.NewApplicationErrorWithCause("record the superseded snapshot: "+err.Error(), ErrTypeStore, err, out)
	}
	return out, nil
}

// logFailure writes the one line of an expected failed attempt: what an
// operator needs to find its row and its workflow, and whether another
// attempt follows (next, 0 when none does).
func (d *Deliverer) logFailure(ctx context.Context, in AttemptInput, info activityInfo, row *models.WebhookDelivery, f *failure, next time.Duration) {
	attrs := []any{
		"event_id", in.EventID, "event_type", row.EventType, "endpoint_id", in.EndpointID, "tenant_id", in.TenantID,
		"attempt", row.Attempt, "error", f.code,
	}
	if row.ResponseStatus != nil {
		attrs = append(attrs, "status", *row.ResponseStatus)
	}
	attrs = append(attrs, "message", row.ErrorMessage, "delivery_id", row.ID, "workflow_id", info.workflowID)
	if in.ReplayOf != "" {
		attrs = append(attrs, "replay_of", in.ReplayOf)
	}
	if next > 0 {
		attrs = append(attrs, "next_attempt_in", next.String())
	} else {
		attrs = append(attrs, "last_attempt", true)
	}
	d.log.WarnContext(ctx, "webhook attempt failed", attrs...)
}

// insertInFlight writes row as in flight: what is about to be sent, no
// outcome yet. row itself keeps no trace of that state, so that the
// outcome written later is all that send put into it.
func (d *Deliverer) insertInFlight(ctx context.Context, row *models.WebhookDelivery) error {
	pre := *row
	pre.Error = models.DeliveryErrInFlight
	pre.ErrorMessage = "the request is being sent; the outcome is written when it ends"
	pre.FinishedAt = pre.StartedAt
	return d.store.InsertAttempt(ctx, &pre)
}

// prepare loads what the attempt sends and builds its request, filling row
// with the request as it will be sent, and picks how it is sent and the
// endpoint's throttle. A non-nil failure, also written into row, means
// nothing is to be sent.
func (d *Deliverer) prepare(ctx context.Context, in AttemptInput, attempt int, row *models.WebhookDelivery) (req *http.Request, snd sender, limits models.Throttle, f *failure) {
	fail := func(err error) (*http.Request, sender, models.Throttle, *failure) {
		return nil, snd, models.Throttle{}, d.fail(row, err, false, nil)
	}

	// One read: a missing event comes back without an endpoint, a
	// missing endpoint with its event.
	ev, ep, err := d.store.GetEventAndEndpoint(ctx, in.TenantID, in.EventID, in.EndpointID)
	if ev != nil {
		row.EventType, row.RecordID = ev.Type, ev.RecordID
	}
	switch {
	case errors.Is(err, models.ErrNotFound) && ev == nil:
		return fail(errEventGone)
	case errors.Is(err, models.ErrNotFound):
		return fail(errEndpointGone)
	case err != nil:
		return fail(&internalError{"load the event and the endpoint", err})
	}
	row.RequestURL = ep.URL
	if !ep.Enabled {
		return fail(errEndpointDisabled)
	}
	if ev.Type == models.EventRecordSnapshot && ep.Ordered() {
		switch sup, err := d.store.SnapshotSuperseded(ctx, ev, ep); {
		case err != nil:
			return fail(&internalError{"check the snapshot against live events", err})
		case sup:
			row.Error = models.DeliveryErrSuperseded
			row.ErrorMessage = "not sent: a later version of the record was committed after the resync began, and its live event reached the endpoint first"
			return nil, snd, models.Throttle{}, &failure{code: models.DeliveryErrSuperseded}
		}
	}
	current, previous, err := d.store.EndpointSecrets(ep)
	if err != nil {
		return fail(&internalError{"open the endpoint's secret", err})
	}
	custom, err := d.store.EndpointHeaders(ep)
	if err != nil {
		return fail(&internalError{"open the endpoint's headers", err})
	}
	auth, tlsm, err := d.store.EndpointCredentials(ep)
	if err != nil {
		return fail(&internalError{"open the endpoint's credentials", err})
	}
	if snd, err = d.senderFor(ep, auth, tlsm); err != nil {
		return fail(&internalError{"load the endpoint's TLS material", err})
	}

	// The URL was checked at subscription time; the rules that need no DNS
	// run again (they may have changed since), and the dialer checks every
	// address. A refused attempt's row still shows what would have been sent.
	_, blocked := d.egress.checkStatic(ep.URL)
	// The body is the stored payload, byte for byte: the signatures cover
	// exactly these bytes, and the row keeps them so they can be checked again.
	body := []byte(ev.Payload)
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return fail(asBlocked(blocked, err))
	}
	// The endpoint's own headers first: recordhub's, set after, would win
	// were a name shared, though none can be (see models.ReservedHeader).
	for name, value := range custom {
		req.Header.Set(name, value)
	}
	setHeaders(req.Header, signedMessage{
		EventID: ev.ID, EventType: ev.Type, Attempt: attempt, Timestamp: d.now().Unix(),
		Body: body, UserAgent: d.userAgent,
	}, current, previous)
	if models.IsBrokerURL(ep.URL) && blocked == nil {
		if snd.broker, err = d.brokerFor(ep, ev, tlsm); err != nil {
			return fail(&internalError{"open the endpoint's broker URL", err})
		}
	}
	row.RequestHeaders = snd.headersOf(req)
	row.RequestBody = ev.Payload
	if blocked != nil {
		return fail(asBlocked(blocked, nil))
	}
	if snd.auth != nil {
		if f := d.token(ctx, &snd, "", row); f != nil {
			return nil, snd, models.Throttle{}, f
		}
		req.Header.Set("Authorization", "Bearer "+snd.token)
		row.RequestHeaders = sentHeaders(req) // masked, as every header recordhub does not own
	}
	return req, snd, ep.Throttle(), nil
}

// send sends req and fills row with what came back. It returns nil on
// success, else what went wrong, also written into row. A receiver that
// answers 401 to an access token gets one fresh token and the request once
// more, within this attempt: the row shows the last request and its answer.
func (d *Deliverer) send(ctx context.Context, snd *sender, req *http.Request, row *models.WebhookDelivery) *failure {
	if snd.broker != nil {
		return d.publish(ctx, snd, req, row)
	}
	f := d.sendOnce(ctx, snd.client, req, row)
	if snd.auth == nil || row.ResponseStatus == nil || *row.ResponseStatus != http.StatusUnauthorized {
		return f
	}
	row.ResponseStatus, row.ResponseHeaders, row.ResponseBody = nil, models.Headers{}, ""
	if f := d.token(ctx, snd, snd.token, row); f != nil {
		return f
	}
	again := req.Clone(ctx)
	body, err := req.GetBody()
	if err != nil {
		return d.fail(row, &internalError{"send the request again", err}, false, nil)
	}
	again.Body = body
	again.Header.Set("Authorization", "Bearer "+snd.token)
	row.Error, row.ErrorMessage = "", ""
	return d.sendOnce(ctx, snd.client, again, row)
}

// sendOnce sends req through client and fills row with what came back.
func (d *Deliverer) sendOnce(ctx context.Context, client *http.Client, req *http.Request, row *models.WebhookDelivery) *failure {
	var tr timing
	reqCtx, cancel := context.WithTimeout(ctx, d.schedule.AttemptTimeout)
	defer cancel()
	defer tr.fill(row)
	resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(reqCtx, tr.trace())))
	if err != nil {
		return d.fail(row, err, errors.Is(reqCtx.Err(), context.DeadlineExceeded), tr.handshakeFailed())
	}
	defer resp.Body.Close()
	row.ResponseStatus = &resp.StatusCode
	row.ResponseHeaders = models.Headers(resp.Header.Clone())
	// The status decides; a body cut short by the deadline is kept as read.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, models.MaxResponseBody))
	row.ResponseBody = string(head) // the store keeps it as valid UTF-8
	// A little more is drained so the connection can be reused; a receiver
	// that sends more than that loses its connection instead.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &statusError{code: resp.StatusCode}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			se.retryAfter, _ = ParseRetryAfter(resp.Header.Get("Retry-After"), d.now())
		}
		return d.fail(row, se, false, nil)
	}
	return nil
}

// fail classifies err and writes it into row.
func (d *Deliverer) fail(row *models.WebhookDelivery, err error, timedOut bool, tlsErr error) *failure {
	c := classify(err, d.schedule.AttemptTimeout, timedOut, tlsErr)
	row.Error, row.ErrorMessage = c.code, c.message
	return &c
}

// asBlocked makes a refused URL a blocked destination.
func asBlocked(err, fallback error) error {
	if err == nil {
		err = fallback
	}
	var b *blockedError
	if errors.As(err, &b) {
		return err
	}
	return &blockedError{reason: err.Error(), err: err}
}

// sentHeaders returns the request's headers as the transport writes them:
// its own, Host and Content-Length (the transport adds no others, since
// compression is off), with the value of every header recordhub does not
// set itself, that is of the endpoint's custom headers, masked: they are
// credentials, and rows are shown to support staff.
func sentHeaders(req *http.Request) models.Headers {
	h := models.Headers(req.Header.Clone())
	for name, values := range h {
		if _, own := models.ReservedHeader(name); !own {
			for i := range values {
				values[i] = models.HeaderMask
			}
		}
	}
	h["Host"] = []string{req.URL.Host}
	h["Content-Length"] = []string{strconv.FormatInt(req.ContentLength, 10)}
	return h
}

// nextDelay is the delay before the attempt after the one info describes
// when the receiver asked for hint: the larger of hint and the scheduled
// delay, capped at the schedule's maximum interval. So a Retry-After never
// brings an attempt forward, and never asks for less than the initial
// delay. Temporal does not cap a next-retry delay itself, hence the cap
// here. The schedule is the one Temporal runs, from the activity's retry
// policy; when the server does not send it, the one configured.
//
// An activity's policy starts where the activity's first attempt stands
// in the delivery's schedule, so its Temporal attempt number places the
// attempt in it; a local attempt's policy is the delivery's schedule from
// its start, which the delivery attempt number places it in.
func (d *Deliverer) nextDelay(info activityInfo, hint time.Duration) time.Duration {
	s, n := d.schedule, info.attempt
	if p := info.policy; p != nil && p.InitialInterval > 0 && p.MaximumInterval > 0 {
		s = scheduleOf(p)
		if !info.local {
			n = info.try
		}
	}
	return min(max(hint, s.Delay(n)), s.MaxInterval)
}

type activityInfo struct {
	// attempt is the delivery attempt number, the row's and
	// X-Webhook-Attempt's; try is Temporal's attempt number of the
	// activity (1 for a local activity).
	attempt, try      int
	workflowID, runID string
	// local: the attempt runs as a local activity.
	local bool
	// policy is the activity's retry policy; nil when Temporal does not
	// say.
	policy *temporal.RetryPolicy
	// retryMax is the input's RetryMax: the delivery's attempts in all; 0
	// when the input does not say.
	retryMax int
}

// attemptInfo reads the activity's attempt number and workflow execution;
// outside an activity (a plain unit test) it is the first Temporal attempt
// of no workflow.
func attemptInfo(ctx context.Context, in AttemptInput) activityInfo {
	first := max(in.FirstAttempt, 1)
	out := activityInfo{attempt: first, try: 1, retryMax: in.RetryMax}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		out.try = max(1, int(info.Attempt))
		out.attempt = first + out.try - 1
		out.workflowID, out.runID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID
		out.local, out.policy = info.IsLocalActivity, info.RetryPolicy
	}
	return out
}

// renumber makes the attempt number n, when that is higher than the one
// Temporal's counting gave.
func (a *activityInfo) renumber(n int) {
	a.attempt = max(a.attempt, n)
}

// last reports whether no attempt may follow this one, by the schedule
// that counts the delivery's attempts: the delivery's own, by its attempt
// number, when the input carries its attempts in all (a local attempt
// does, since its own policy allows it one attempt whatever the delivery
// allows); else the activity's retry policy, by Temporal's attempt
// number. Without a policy in the info or a RetryMax in the input, no
// attempt is known to be the last.
func (a activityInfo) last() bool {
	if a.retryMax > 0 || a.policy == nil {
		return Schedule{Attempts: a.retryMax}.Last(a.attempt)
	}
	return scheduleOf(a.policy).Last(a.try)
}
