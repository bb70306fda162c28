package workflows

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/recordhub/recordhub/models"
)

// Store is the outbox as the dispatcher sees it; *models.Store is one.
type Store interface {
	// ClaimEvents claims pending events for a lease, fairly between tenants.
	ClaimEvents(ctx context.Context, c models.Claim) ([]models.Event, error)
	// ReleaseEvents gives up the owner's claims on events still pending.
	ReleaseEvents(ctx context.Context, owner string, ids []string) error
	// SubscribedEndpoints returns the endpoints that want the event,
	// disabled ones included.
	SubscribedEndpoints(ctx context.Context, tenantID, eventType, moduleID string) ([]models.WebhookEndpoint, error)
	// InsertSkippedDeliveries records the event as skipped for disabled
	// endpoints, once per pair however often it is called.
	InsertSkippedDeliveries(ctx context.Context, ev *models.Event, endpoints []models.WebhookEndpoint) error
	// MarkDispatched records that the events' deliveries were started.
	MarkDispatched(ctx context.Context, ids []string) error
	// EventWake signals soon after new events were committed.
	EventWake() <-chan struct{}
	// EventBacklog returns the number of pending events and the age of the
	// oldest, for the metrics.
	EventBacklog(ctx context.Context) (int64, time.Duration, error)
}

var _ Store = (*models.Store)(nil)

// Dispatcher defaults.
const (
	// DefaultBatchSize and DefaultConcurrency make a round one batch of
	// starts at once: a round lasts about one start, however busy
	// Temporal is, so a tenant's event claimed in the next round waits
	// that long behind another tenant's backlog, not a hundred starts.
	DefaultBatchSize    = 16
	DefaultConcurrency  = 16
	DefaultPollInterval = time.Second
	// DefaultMaxBackoff caps the wait after a failed round: short, so that
	// the outbox drains soon after Temporal answers again. A failed round
	// costs one claim and one start, so trying twice a second is cheap.
	DefaultMaxBackoff = 500 * time.Millisecond
	// DefaultLease is how long a claim keeps other dispatchers off events:
	// far longer than a round takes, so that a live dispatcher never loses
	// its events; a dead one's are taken over when it ends.
	DefaultLease = 30 * time.Second
	// startTimeout bounds one start, so that a server that does not answer
	// holds the outbox for a round, not for ever.
	startTimeout = 10 * time.Second
	// observeEvery is how often the outbox gauges are refreshed.
	observeEvery = 5 * time.Second
)

// Dispatcher is the outbox dispatcher: it starts one Delivery workflow per
// (event, subscribed endpoint) for the events that record changes wrote in
// their transaction, and then marks the events dispatched. A subscribed
// endpoint that is disabled gets no workflow: the event is recorded as
// skipped for it instead (a webhook_deliveries row, error
// endpoint_disabled), for a later recovery to send. An endpoint_disabled
// event never goes to the endpoint it is about. For an endpoint whose
// ordering is "record" it starts nothing itself: it hands the delivery to
// the record's sequencer (RecordSequence), which starts it in version
// order; a record's events that such an endpoint subscribes to are handled
// one after another, in version order, and none after one that failed.
//
// Several dispatchers (one per worker process) share one outbox: each
// round claims events for a lease (ClaimEvents), so that no two start the
// same event, and a dispatcher that dies holding claims loses them when the
// lease ends. Claims are fair between tenants, and every start carries the
// tenant as Temporal's fairness key, so that one tenant's burst does not
// queue another tenant's events behind it, in the outbox or in the task
// queue.
//
// Every step may be repeated without harm, which is what makes the outbox
// lose and double nothing: the workflow id is derived from the pair, so a
// start repeated after a crash between the start and the marking, or after
// a lease ran out, is refused by Temporal and counts as done. An event is
// marked only when all its deliveries started, and is released for the next
// round otherwise.
type Dispatcher struct {
	Store   Store
	Starter Starter
	// Policy is the delivery schedule from the configuration.
	Policy RetryPolicy
	// TaskQueue is where deliveries run (DefaultTaskQueue when empty).
	TaskQueue string
	// Owner names this dispatcher in its claims; it must differ between
	// processes. Empty: a random name, chosen at the first round.
	Owner string
	// Log receives start failures; nil discards them.
	Log *slog.Logger
	// Metrics, when set, receives the outbox's lag and backlog and the starts.
	Metrics *Metrics
	// BatchSize is how many events one round claims (DefaultBatchSize).
	BatchSize int
	// Concurrency is how many events are started at once (DefaultConcurrency).
	Concurrency int
	// PollInterval is how often the outbox is read without a wake-up
	// (DefaultPollInterval): for events written by other processes, and for
	// events whose claims ran out.
	PollInterval time.Duration
	// MaxBackoff caps the wait after a failed round (DefaultMaxBackoff);
	// the wait starts at a tenth of it and doubles.
	MaxBackoff time.Duration
	// Lease is how long a round's claims hold (DefaultLease).
	Lease time.Duration

	observed time.Time
	// ambiguous is set by a round whose start failed in a way that may
	// have started the workflow anyway, cleared by a round without one.
	ambiguous bool
}

// Run dispatches events until ctx ends: when this process commits events,
// every PollInterval, and at once again while rounds find events. After a
// failed round (Temporal or the database unreachable) it waits, longer
// each time up to MaxBackoff, before it tries again.
func (d *Dispatcher) Run(ctx context.Context) {
	poll := positiveOr(d.PollInterval, DefaultPollInterval)
	maxBackoff := positiveOr(d.MaxBackoff, DefaultMaxBackoff)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var backoff time.Duration
	for {
		n, err := d.DispatchOnce(ctx)
		d.observe(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			backoff = min(max(2*backoff, maxBackoff/10), maxBackoff)
			d.log().Warn("outbox dispatch failed; events stay pending", "retry_in", backoff, "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		if n > 0 {
			continue // more are likely waiting
		}
		select {
		case <-ctx.Done():
			return
		case <-d.Store.EventWake():
		case <-tick.C:
		}
	}
}

// DispatchOnce claims one round of pending events, starts their deliveries
// and marks the events whose deliveries all started. It returns how many
// events it marked. After the first failed start it starts no further
// events, releases the events it did not mark, and returns the error.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	if d.Owner == "" {
		d.Owner = models.NewID(models.PrefixDispatcher)
	}
	began := time.Now()
	events, err := d.Store.ClaimEvents(ctx, models.Claim{
		Owner: d.Owner, Limit: positiveOr(d.BatchSize, DefaultBatchSize), Lease: positiveOr(d.Lease, DefaultLease),
	})
	if err != nil {
		return 0, err
	}
	if len(events) == 0 {
		return 0, nil
	}
	// Starts are eager: the first workflow task comes back in the start's
	// answer to this process's worker (the SDK falls back to the task
	// queue when the worker has no free slot), so each worker runs what
	// its dispatcher claimed. After a start whose answer was lost (a
	// restarting Temporal answers "deadline exceeded" to starts it did
	// make), until a round goes by without one, they go through the task
	// queue instead: a lost answer leaves its eager task with no worker
	// until the task's timeout (10 s), where through the task queue it
	// waits only for a poller. A start that never reached Temporal
	// (unavailable: connection refused) is no reason: after an outage the
	// pollers are still backing off (the SDK waits up to 10 s between
	// failed polls), and only eager starts skip them. README, "Running in
	// production", has the measurements behind this.
	eager := !d.ambiguous
	subs := &subscriptions{store: d.Store}
	var (
		wg        sync.WaitGroup
		sem       = make(chan struct{}, positiveOr(d.Concurrency, DefaultConcurrency))
		errs      = make([]error, len(events))
		done      = make([]bool, len(events))
		failed    atomic.Bool
		ambiguous atomic.Bool
	)
	for _, group := range recordGroups(events, d.orderedEvents(ctx, subs, events)) {
		sem <- struct{}{}
		if failed.Load() || ctx.Err() != nil {
			<-sem
			break
		}
		// A record's events go one after another, in version order, and
		// none after one that failed: a later one is released with the
		// other unstarted events, so that no endpoint that orders by
		// record gets it before the earlier one.
		wg.Go(func() {
			defer func() { <-sem }()
			for _, i := range group {
				if errs[i] = d.dispatch(ctx, subs, &events[i], eager); errs[i] != nil {
					failed.Store(true)
					if answerLost(errs[i]) {
						ambiguous.Store(true)
					}
					return
				}
				done[i] = true
			}
		})
	}
	wg.Wait()
	d.ambiguous = ambiguous.Load()
	var marked, left []string
	for i, ev := range events {
		if done[i] {
			marked = append(marked, ev.ID)
		} else {
			left = append(left, ev.ID)
		}
	}
	// The claims' own context may be over (shutdown): the bookkeeping
	// still runs, briefly, so that the next owner need not wait a lease.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	if err := d.Store.MarkDispatched(bctx, marked); err != nil {
		// The deliveries did start; the next round finds them started.
		return 0, errors.Join(err, errors.Join(errs...))
	}
	if err := d.Store.ReleaseEvents(bctx, d.Owner, left); err != nil {
		errs = append(errs, err)
	}
	d.log().Debug("outbox round", "claimed", len(events), "started", len(marked), "eager", eager, "took", time.Since(began))
	return len(marked), errors.Join(errs...)
}

// orderedEvents reports, for each event of a batch, whether an endpoint
// whose ordering is "record" subscribes to it; when that cannot be read,
// it says yes: ordering one more record costs a little time, and the
// event's own dispatch reports the error.
func (d *Dispatcher) orderedEvents(ctx context.Context, subs *subscriptions, events []models.Event) []bool {
	out := make([]bool, len(events))
	for i := range events {
		eps, err := subs.of(ctx, &events[i])
		out[i] = err != nil || slices.ContainsFunc(eps, func(ep models.WebhookEndpoint) bool { return ep.Ordered() })
	}
	return out
}

// recordGroups splits a batch into the indexes of each record's events
// that an ordered endpoint subscribes to (ordered[i]), in (RecordVersion,
// OccurredAt, ID) order, the groups in the order of their first event in
// the batch; any other event is a group of its own: a record's events that
// no endpoint orders start concurrently, as before ordering existed.
func recordGroups(events []models.Event, ordered []bool) [][]int {
	var groups [][]int
	byRecord := map[[2]string]int{}
	for i := range events {
		ev := &events[i]
		if ev.RecordID == "" || !ordered[i] {
			groups = append(groups, []int{i})
			continue
		}
		key := [2]string{ev.TenantID, ev.RecordID}
		g, ok := byRecord[key]
		if !ok {
			g = len(groups)
			byRecord[key] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	for _, g := range groups {
		slices.SortFunc(g, func(a, b int) int {
			x, y := &events[a], &events[b]
			return cmp.Or(cmp.Compare(x.RecordVersion, y.RecordVersion), x.OccurredAt.Compare(y.OccurredAt), strings.Compare(x.ID, y.ID))
		})
	}
	return groups
}

// answerLost tells whether a failed start may have reached Temporal and
// started the workflow: its deadline passed, or it was cut off, before the
// answer came. Refused connections and Temporal's own refusals did not.
func answerLost(err error) bool {
	var (
		deadline *serviceerror.DeadlineExceeded
		canceled *serviceerror.Canceled
	)
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &deadline) || errors.As(err, &canceled)
}

// subscriptions looks up the endpoints subscribed to events once per
// (tenant, type, module) and batch: a batch is mostly events of a few
// modules, and a backlog of thousands should not cost a query each.
type subscriptions struct {
	store Store
	mu    sync.Mutex
	byKey map[[3]string][]models.WebhookEndpoint
}

func (s *subscriptions) of(ctx context.Context, ev *models.Event) ([]models.WebhookEndpoint, error) {
	key := [3]string{ev.TenantID, ev.Type, ev.ModuleID}
	s.mu.Lock()
	eps, ok := s.byKey[key]
	s.mu.Unlock()
	if ok {
		return eps, nil
	}
	eps, err := s.store.SubscribedEndpoints(ctx, ev.TenantID, ev.Type, ev.ModuleID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.byKey == nil {
		s.byKey = map[[3]string][]models.WebhookEndpoint{}
	}
	s.byKey[key] = eps
	s.mu.Unlock()
	return eps, nil
}

// dispatch starts the deliveries of one event, to every enabled endpoint
// that subscribes to it at the time of the batch and whose filter the
// event's record passes, and records it as skipped for the disabled ones
// it passes. An endpoint whose filter the record fails gets nothing: no
// workflow, no row. All of it is harmless to repeat.
func (d *Dispatcher) dispatch(ctx context.Context, subs *subscriptions, ev *models.Event, eager bool) error {
	eps, err := subs.of(ctx, ev)
	if err != nil {
		return fmt.Errorf("event %s: %w", ev.ID, err)
	}
	// The endpoint an endpoint_disabled event is about never gets it, not
	// even when it was enabled again since, nor a skipped row for it.
	subject, err := ev.DisabledEndpointID()
	if err != nil {
		// Cannot happen with the store's bodies; without the subject the
		// event cannot be sent safely, and retrying would not help.
		d.log().Error("webhook event not delivered", "event_id", ev.ID, "error", err)
		return nil
	}
	var enabled, disabled []models.WebhookEndpoint
	match := models.NewEventMatcher(ev)
	for _, ep := range eps {
		switch {
		case ep.ID == subject:
		case !d.passes(match, &ep):
		case ep.Enabled:
			enabled = append(enabled, ep)
		default:
			disabled = append(disabled, ep)
		}
	}
	if err := d.Store.InsertSkippedDeliveries(ctx, ev, disabled); err != nil {
		return err
	}
	for i := range enabled {
		in, err := deliveryInput(ev, &enabled[i], d.Policy, "")
		if err != nil {
			// Cannot happen with the store's ids; retrying would not help,
			// and keeping the event pending would hold up the outbox.
			d.log().Error("webhook delivery skipped", "event_id", ev.ID, "endpoint_id", enabled[i].ID, "error", err)
			continue
		}
		if enabled[i].Ordered() && ev.RecordID != "" {
			// The record's sequencer starts the delivery in its turn.
			if err := signalSequence(ctx, d.Starter, ev, d.TaskQueue, in, startTimeout); err != nil {
				d.Metrics.started(startFailed)
				return err
			}
			d.Metrics.started(startStarted)
			continue
		}
		id := WorkflowID(ev.ID, enabled[i].ID)
		// The delivery continues the trace of the change that wrote the
		// event (the client's tracing interceptor, when tracing is on).
		_, _, err = startDelivery(ctx, d.Starter, ev, id, d.TaskQueue, in, eager)
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case err == nil:
			d.Metrics.started(startStarted)
		case errors.As(err, &already):
			d.Metrics.started(startAlreadyStarted)
		default:
			d.Metrics.started(startFailed)
			return fmt.Errorf("start workflow %s: %w", id, err)
		}
	}
	return nil
}

// passes reports whether the event passes ep's filter. An event whose
// record cannot be read (never, with the store's bodies) is delivered:
// sending what a filter might have held back is better than losing it.
func (d *Dispatcher) passes(m *models.EventMatcher, ep *models.WebhookEndpoint) bool {
	ok, err := m.Passes(ep)
	if err != nil {
		d.log().Error("webhook filter not applied", "endpoint_id", ep.ID, "error", err)
		return true
	}
	return ok
}

// observe updates the outbox gauges, at most once per observeEvery.
func (d *Dispatcher) observe(ctx context.Context) {
	if d.Metrics == nil || time.Since(d.observed) < observeEvery || ctx.Err() != nil {
		return
	}
	d.observed = time.Now()
	n, age, err := d.Store.EventBacklog(ctx)
	if err != nil {
		d.log().Warn("outbox backlog unknown", "error", err)
		return
	}
	d.Metrics.backlog(n, age)
}

func (d *Dispatcher) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

// positiveOr returns v, or def when v is not positive (unlike cmp.Or,
// which takes any non-zero v).
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
