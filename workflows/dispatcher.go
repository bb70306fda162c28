package workflows

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/recordhub/recordhub/models"
)

// Store is the outbox as the dispatcher sees it; *models.Store is one.
type Store interface {
	// PendingEvents returns up to limit undispatched events, oldest first.
	PendingEvents(ctx context.Context, limit int) ([]models.Event, error)
	// SubscribedEndpoints returns the enabled endpoints that want the event.
	SubscribedEndpoints(ctx context.Context, tenantID, eventType, moduleID string) ([]models.WebhookEndpoint, error)
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
	DefaultBatchSize    = 100
	DefaultConcurrency  = 8
	DefaultPollInterval = time.Second
	DefaultMaxBackoff   = 30 * time.Second
	// startTimeout bounds one start, so that a server that does not answer
	// holds the outbox for a round, not for ever.
	startTimeout = 10 * time.Second
)

// Dispatcher is the outbox dispatcher: it starts one Delivery workflow per
// (event, subscribed endpoint) for the events that record changes wrote in
// their transaction, and then marks the events dispatched.
//
// Every step may be repeated without harm, which is what makes the outbox
// lose and double nothing: the workflow id is derived from the pair, so a
// start repeated after a crash between the start and the marking, or made
// by the dispatcher of another process at the same moment, is refused by
// Temporal and counts as done. An event is marked only when all its
// deliveries started, and stays pending for the next round otherwise.
type Dispatcher struct {
	Store   Store
	Starter Starter
	// Policy is the delivery schedule from the configuration.
	Policy RetryPolicy
	// Log receives start failures; nil discards them.
	Log *slog.Logger
	// Metrics, when set, receives the outbox's lag and backlog and the starts.
	Metrics *Metrics
	// BatchSize is how many events one round reads (DefaultBatchSize).
	BatchSize int
	// Concurrency is how many events are started at once (DefaultConcurrency).
	Concurrency int
	// PollInterval is how often the outbox is read without a wake-up
	// (DefaultPollInterval): for events written by other processes on
	// SQLite, and for events a crashed process left behind.
	PollInterval time.Duration
	// MaxBackoff caps the wait after a failed round (DefaultMaxBackoff);
	// the wait starts at PollInterval and doubles.
	MaxBackoff time.Duration

	observed time.Time
}

// Run dispatches events until ctx ends: when this process commits events,
// every PollInterval, and at once again while full batches come back.
// After a failed round (Temporal or the database unreachable) it waits,
// longer each time up to MaxBackoff, before it tries again.
func (d *Dispatcher) Run(ctx context.Context) {
	poll := cmpOr(d.PollInterval, DefaultPollInterval)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var backoff time.Duration
	for {
		n, err := d.DispatchOnce(ctx)
		d.observe(ctx, poll)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			backoff = min(max(2*backoff, poll), cmpOr(d.MaxBackoff, DefaultMaxBackoff))
			d.log().Warn("outbox dispatch failed; events stay pending", "retry_in", backoff, "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		if n == cmpOr(d.BatchSize, DefaultBatchSize) {
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

// DispatchOnce reads one batch of pending events, starts their deliveries
// and marks the events whose deliveries all started. It returns how many
// events it marked. After the first failed start it starts no further
// events and returns the error; the events not marked stay pending.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	events, err := d.Store.PendingEvents(ctx, cmpOr(d.BatchSize, DefaultBatchSize))
	if err != nil {
		return 0, err
	}
	if len(events) == 0 {
		return 0, nil
	}
	subs := &subscriptions{store: d.Store}
	var (
		wg     sync.WaitGroup
		sem    = make(chan struct{}, cmpOr(d.Concurrency, DefaultConcurrency))
		errs   = make([]error, len(events))
		done   = make([]bool, len(events))
		failed atomic.Bool
	)
	for i := range events {
		sem <- struct{}{}
		if failed.Load() || ctx.Err() != nil {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if errs[i] = d.dispatch(ctx, subs, &events[i]); errs[i] != nil {
				failed.Store(true)
				return
			}
			done[i] = true
		})
	}
	wg.Wait()
	var ids []string
	for i, ev := range events {
		if done[i] {
			ids = append(ids, ev.ID)
		}
	}
	if err := d.Store.MarkDispatched(ctx, ids); err != nil {
		// The deliveries did start; the next round finds them started.
		return 0, errors.Join(err, errors.Join(errs...))
	}
	return len(ids), errors.Join(errs...)
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

// dispatch starts the deliveries of one event, to every endpoint that
// subscribes to it at the time of the batch.
func (d *Dispatcher) dispatch(ctx context.Context, subs *subscriptions, ev *models.Event) error {
	eps, err := subs.of(ctx, ev)
	if err != nil {
		return fmt.Errorf("event %s: %w", ev.ID, err)
	}
	for i := range eps {
		in, err := deliveryInput(ev, &eps[i], d.Policy, "")
		if err != nil {
			// Cannot happen with the store's ids; retrying would not help,
			// and keeping the event pending would hold up the outbox.
			d.log().Error("webhook delivery skipped", "event_id", ev.ID, "endpoint_id", eps[i].ID, "error", err)
			continue
		}
		id := WorkflowID(ev.ID, eps[i].ID)
		sctx, cancel := context.WithTimeout(ctx, startTimeout)
		_, err = d.Starter.ExecuteWorkflow(sctx, startOptions(id, in), Delivery, in)
		cancel()
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

// observe updates the outbox gauges, at most once per interval.
func (d *Dispatcher) observe(ctx context.Context, every time.Duration) {
	if d.Metrics == nil || time.Since(d.observed) < every || ctx.Err() != nil {
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

// cmpOr returns v, or def when v is not positive.
func cmpOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
