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

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// Store is the outbox as the dispatcher sees it; *models.Store is one.
type Store interface {
	// ClaimEvents claims pending events for a lease, fairly between tenants.
	ClaimEvents(ctx context.Context, c models.Claim) ([]models.Event, error)
	// ReleaseEvents gives up the owner's claims on events still pending.
	ReleaseEvents(ctx context.Context, owner string, ids []string) error
	// ReleaseEventAfter gives up the owner's claim on an event whose
	// deliveries were started up to the endpoint after, in id order.
	ReleaseEventAfter(ctx context.Context, owner, id, after string) error
	// DispatchEndpoints returns the tenants' endpoints, disabled ones
	// included, by tenant and id, with what dispatching needs.
	DispatchEndpoints(ctx context.Context, tenantIDs []string) ([]models.WebhookEndpoint, error)
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
	DefaultBatchSize   = 16
	DefaultConcurrency = 16
	// DefaultRoundStarts bounds the deliveries one round starts, shared
	// between the tenants of its events: an event that many endpoints
	// subscribe to is started over several rounds, and another tenant's
	// event waits for a round of two waves of starts, not for the hundred
	// starts of one event.
	DefaultRoundStarts  = 2 * DefaultConcurrency
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
// order; a record's events that such an endpoint subscribes to are
// delivered one after another, in version order, each once the one before
// it was delivered or given up: a failing delivery holds back that
// record's later ones to that endpoint while it retries, and no longer.
//
// Several dispatchers (one per worker process) share one outbox: each
// round claims events for a lease (ClaimEvents), so that no two start the
// same event, and a dispatcher that dies holding claims loses them when the
// lease ends. Claims are fair between tenants, and every start carries the
// tenant as Temporal's fairness key, so that one tenant's burst does not
// queue another tenant's events behind it, in the outbox or in the task
// queue. Rounds are fair by deliveries too, not only by events: a round
// starts at most RoundStarts deliveries, in equal shares between its
// tenants, so that one tenant's event with a hundred endpoints is started
// over several rounds (its progress kept in the event, FanoutAfter), and
// another tenant's event waits for a short round, not for a hundred
// starts. A round's starts run concurrently, whichever events and tenants
// they belong to.
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
	Policy activities.Schedule
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
	// Concurrency is how many deliveries are started at once
	// (DefaultConcurrency).
	Concurrency int
	// RoundStarts is the most deliveries one round starts
	// (DefaultRoundStarts), in equal shares between the tenants whose
	// events the round claimed (one at least each).
	RoundStarts int
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
// events it marked or started in part (their rest waits for the next
// round, which Run then makes at once). After the first failed start it
// starts no further events, releases the events it did not mark, and
// returns the error.
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
	// until the task's timeout (a minute, see workflowTaskTimeout), where through the task queue it
	// waits only for a poller. A start that never reached Temporal
	// (unavailable: connection refused) is no reason: after an outage the
	// pollers are still backing off (the SDK waits up to 10 s between
	// failed polls), and only eager starts skip them.
	eager := !d.ambiguous
	plans, err := d.plan(ctx, events)
	if err != nil {
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
		defer cancel()
		return 0, errors.Join(err, d.Store.ReleaseEvents(bctx, d.Owner, eventIDs(events)))
	}
	var (
		wg        sync.WaitGroup
		sem       = make(chan struct{}, positiveOr(d.Concurrency, DefaultConcurrency))
		errs      = make([]error, len(events))
		done      = make([]bool, len(events))
		progress  = make([]bool, len(events))
		failed    atomic.Bool
		ambiguous atomic.Bool
		starts    atomic.Int64
	)
	for _, group := range recordGroups(events, orderedPlans(plans)) {
		// A record's events go one after another, in version order, and
		// none after one that failed or was started only in part: a later
		// one is released with the other unstarted events, so that no
		// endpoint that orders by record gets it before the earlier one.
		wg.Go(func() {
			for _, i := range group {
				p := &plans[i]
				if failed.Load() || ctx.Err() != nil {
					return
				}
				n, err := d.dispatch(ctx, &events[i], p, sem, &failed, eager)
				starts.Add(int64(n))
				if errs[i] = err; err != nil {
					failed.Store(true)
					if answerLost(err) {
						ambiguous.Store(true)
					}
					return
				}
				if p.partial() {
					progress[i] = p.take > 0
					return
				}
				done[i] = true
			}
		})
	}
	wg.Wait()
	d.ambiguous = ambiguous.Load()
	var marked, left []string
	progressed := 0
	for i, ev := range events {
		switch {
		case done[i]:
			marked = append(marked, ev.ID)
		case progress[i]:
			progressed++
		default:
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
	for i := range events {
		if progress[i] {
			p := &plans[i]
			if err := d.Store.ReleaseEventAfter(bctx, d.Owner, events[i].ID, p.targets[p.take-1].ID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	d.log().Debug("outbox round", "claimed", len(events), "started", len(marked), "deliveries", starts.Load(),
		"eager", eager, "took", time.Since(began))
	return len(marked) + progressed, errors.Join(errs...)
}

// eventPlan is what a round does with one claimed event: the endpoints it
// starts the event's delivery to, and those it records it as skipped for.
type eventPlan struct {
	// targets are the enabled endpoints that want the event and whose
	// filter its record passes, after the event's FanoutAfter, in id
	// order; the round starts the first take of them, the next round the
	// rest.
	targets []models.WebhookEndpoint
	take    int
	// skipped are the disabled endpoints that want the event, after its
	// FanoutAfter.
	skipped []models.WebhookEndpoint
	// ordered: an endpoint whose ordering is "record" wants the event.
	ordered bool
}

// partial reports whether the round starts only some of the event's
// deliveries.
func (p *eventPlan) partial() bool { return p.take < len(p.targets) }

// plan reads the endpoints of the round's tenants, once, and decides for
// each event which deliveries this round starts: in the order of the
// batch (turns between tenants), each tenant's share of RoundStarts; an
// event of a record that an ordered endpoint wants takes nothing once an
// earlier event of its record got less than all it needs.
func (d *Dispatcher) plan(ctx context.Context, events []models.Event) ([]eventPlan, error) {
	var tenants []string
	for i := range events {
		if !slices.Contains(tenants, events[i].TenantID) {
			tenants = append(tenants, events[i].TenantID)
		}
	}
	all, err := d.Store.DispatchEndpoints(ctx, tenants)
	if err != nil {
		return nil, err
	}
	byTenant := map[string][]models.WebhookEndpoint{}
	for _, ep := range all {
		byTenant[ep.TenantID] = append(byTenant[ep.TenantID], ep)
	}
	plans := make([]eventPlan, len(events))
	for i := range events {
		plans[i] = d.planEvent(&events[i], byTenant[events[i].TenantID])
	}
	roundStarts := positiveOr(d.RoundStarts, DefaultRoundStarts)
	share := (roundStarts + len(tenants) - 1) / len(tenants)
	left := map[string]int{}
	for _, t := range tenants {
		left[t] = share
	}
	for _, group := range recordGroups(events, orderedPlans(plans)) {
		short := false
		for _, i := range group {
			p := &plans[i]
			if short {
				continue // take stays 0: it waits for the earlier event
			}
			t := events[i].TenantID
			p.take = min(left[t], len(p.targets))
			left[t] -= p.take
			short = p.partial()
		}
	}
	return plans, nil
}

// planEvent picks ev's endpoints among its tenant's eps: those that
// subscribe to it, after its FanoutAfter, whose filter its record passes,
// never the endpoint an endpoint_disabled event is about (not even when it
// was enabled again since, nor a skipped row for it).
func (d *Dispatcher) planEvent(ev *models.Event, eps []models.WebhookEndpoint) eventPlan {
	var p eventPlan
	subject, err := ev.DisabledEndpointID()
	if err != nil {
		// Cannot happen with the store's bodies; without the subject the
		// event cannot be sent safely, and retrying would not help: it is
		// marked dispatched with nothing started.
		d.log().Error("webhook event not delivered", "event_id", ev.ID, "error", err)
		return p
	}
	match := models.NewEventMatcher(ev)
	for _, ep := range eps {
		if !ep.Subscribes(ev.Type, ev.ModuleID) || ep.ID == subject {
			continue
		}
		p.ordered = p.ordered || ep.Ordered()
		switch {
		case ep.ID <= ev.FanoutAfter:
		case !d.passes(match, &ep):
		case ep.Enabled:
			p.targets = append(p.targets, ep)
		default:
			p.skipped = append(p.skipped, ep)
		}
	}
	return p
}

// orderedPlans reports, for each event of a batch, whether an endpoint
// whose ordering is "record" subscribes to it.
func orderedPlans(plans []eventPlan) []bool {
	out := make([]bool, len(plans))
	for i := range plans {
		out[i] = plans[i].ordered
	}
	return out
}

func eventIDs(events []models.Event) []string {
	ids := make([]string, len(events))
	for i := range events {
		ids[i] = events[i].ID
	}
	return ids
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

// dispatch starts the deliveries of one event that its plan takes, each
// holding one of sem's slots while it starts, and records the event as
// skipped for the disabled endpoints that want it. It returns how many it
// started; after a failed start (or once failed is set by another) it
// starts no more, and returns the error. All of it is harmless to repeat.
func (d *Dispatcher) dispatch(ctx context.Context, ev *models.Event, p *eventPlan, sem chan struct{}, failed *atomic.Bool, eager bool) (int, error) {
	if err := d.Store.InsertSkippedDeliveries(ctx, ev, p.skipped); err != nil {
		return 0, err
	}
	targets := p.targets[:p.take]
	errs := make([]error, len(targets))
	var (
		wg sync.WaitGroup
		n  atomic.Int64
	)
	for j := range targets {
		sem <- struct{}{}
		if failed.Load() || ctx.Err() != nil {
			<-sem
			errs[j] = errNotStarted
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if errs[j] = d.start(ctx, ev, &targets[j], eager); errs[j] != nil {
				failed.Store(true)
				return
			}
			n.Add(1)
		})
	}
	wg.Wait()
	return int(n.Load()), errors.Join(errs...)
}

// errNotStarted is an event's error when its deliveries were left for the
// next round, not tried: another start of the round failed, or the
// dispatcher stops.
var errNotStarted = errors.New("deliveries left for the next round")

// start starts the delivery of ev to ep, or hands it to the record's
// sequencer when ep orders by record.
func (d *Dispatcher) start(ctx context.Context, ev *models.Event, ep *models.WebhookEndpoint, eager bool) error {
	in, err := deliveryInput(ev, ep, d.Policy, "")
	if err != nil {
		// Cannot happen with the store's ids; retrying would not help,
		// and keeping the event pending would hold up the outbox.
		d.log().Error("webhook delivery skipped", "event_id", ev.ID, "endpoint_id", ep.ID, "error", err)
		return nil
	}
	if ep.Ordered() && ev.RecordID != "" {
		// The record's sequencer starts the delivery in its turn.
		if err := signalSequence(ctx, d.Starter, ev, d.TaskQueue, in, startTimeout); err != nil {
			d.Metrics.started(startFailed)
			return err
		}
		d.Metrics.started(startStarted)
		return nil
	}
	id := WorkflowID(ev.ID, ep.ID)
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
