package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/cmd/internal/loglevel"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/workflows"
)

// webhooks is the Temporal side of serve: a client for every role; the
// worker and the outbox dispatcher in worker roles; the embedded server
// when TEMPORAL_ADDRESS is empty.
type webhooks struct {
	client       client.Client
	replayer     *workflows.Replayer
	recoveries   *workflows.Recoveries
	resyncs      *workflows.Resyncs
	worker       worker.Worker
	stopDispatch context.CancelFunc
	dispatchDone chan struct{}
	stopServer   func() error
}

// reconnectBackoff is how the client's connection retries while Temporal
// is unreachable: at most half a second apart (gRPC's default waits up to
// 120 s, the SDK's 10 s), so that the outbox drains soon after Temporal is
// back.
var reconnectBackoff = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond},
	MinConnectTimeout: 5 * time.Second,
}

// temporalClientOptions are the options of the service's Temporal client
// of the server at addr: its log, its tracing, and reconnectBackoff.
func temporalClientOptions(addr string, cfg Config, log *slog.Logger, tr *tracing) (client.Options, error) {
	// The SDK logs every retry of every poll; warnings and errors suffice.
	// A failed attempt that is the receiver's doing is logged by the
	// deliverer, once, as a warning, and its error is benign, which the
	// SDK logs at debug level: its errors are the ones to act on.
	sdkLog := slog.New(loglevel.Filter(log.Handler(), slog.LevelWarn))
	opts := client.Options{
		HostPort: addr, Namespace: cfg.TemporalNamespace, Logger: sdklog.NewStructuredLogger(sdkLog),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithConnectParams(reconnectBackoff)}},
	}
	var err error
	if opts.Interceptors, err = tr.temporalInterceptors(); err != nil {
		return client.Options{}, err
	}
	return opts, nil
}

// startWebhooks connects to (or starts) Temporal, and in worker roles
// registers the search attributes and starts the worker and the
// dispatcher. The API role's client connects lazily: the API accepts
// writes while Temporal is down (the outbox holds their events), and only
// replays need Temporal.
func startWebhooks(ctx context.Context, cfg Config, store *models.Store, reg prometheus.Registerer, log *slog.Logger, tr *tracing, throttles activities.Throttle) (_ *webhooks, err error) {
	// The delivery schedule, the one value that the workflows carry in
	// their inputs and the deliverer reads its attempts' timeout from.
	schedule := activities.Schedule{
		Initial: cfg.WebhookRetryInitial, MaxInterval: cfg.WebhookRetryMaxInterval, AttemptTimeout: cfg.WebhookTimeout,
	}
	if cfg.runsWorker() {
		if err := checkThrottlesHeld(ctx, cfg, store); err != nil {
			return nil, err
		}
	}
	wh := &webhooks{}
	defer func() {
		if err != nil {
			wh.stop()
		}
	}()
	addr := cfg.TemporalAddress
	if addr == "" {
		if addr, wh.stopServer, err = startEmbeddedTemporal(ctx, cfg, log); err != nil {
			return nil, fmt.Errorf("embedded temporal: %w", err)
		}
		log.Info("embedded Temporal server", "address", addr, "namespace", cfg.TemporalNamespace)
	}
	opts, err := temporalClientOptions(addr, cfg, log, tr)
	if err != nil {
		return nil, err
	}
	if cfg.runsWorker() {
		wh.client, err = client.DialContext(ctx, opts)
	} else {
		wh.client, err = client.NewLazyClient(opts)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to temporal at %s: %w", addr, err)
	}
	wh.replayer = &workflows.Replayer{Starter: wh.client, Store: store, Policy: schedule, TaskQueue: cfg.TemporalTaskQueue}
	wh.recoveries = &workflows.Recoveries{Starter: wh.client, Describer: wh.client, Store: store, TaskQueue: cfg.TemporalTaskQueue}
	wh.resyncs = &workflows.Resyncs{Starter: wh.client, Describer: wh.client, Store: store, TaskQueue: cfg.TemporalTaskQueue}
	if !cfg.runsWorker() {
		return wh, nil
	}
	if err := workflows.RegisterSearchAttributes(ctx, wh.client, cfg.TemporalNamespace); err != nil {
		return nil, fmt.Errorf("register search attributes: %w", err)
	}

	deliverer, err := activities.NewDeliverer(store, activities.Config{
		Schedule: schedule, AllowCIDRs: cfg.WebhookAllowCIDRs, Version: appVersion(), Metrics: activities.NewMetrics(reg),
		DisableAfter:   cfg.EndpointDisableAfter,
		TracerProvider: tr.tracerProvider(), Propagator: tr.textPropagator(),
		Logger: log, Throttle: throttles,
	})
	if err != nil {
		return nil, err
	}
	// Pollers as measured on the embedded server on 2 cores: the default two workflow-task
	// pollers cap one worker at 25-45 deliveries a second.
	// Workflows and activities are found by their pinned names only, never
	// by their Go functions' names (see workflows.WebhookDelivery).
	wh.worker = worker.New(wh.client, cfg.TemporalTaskQueue, worker.Options{
		MaxConcurrentWorkflowTaskPollers: 32,
		MaxConcurrentActivityTaskPollers: 8,
		DisableRegistrationAliasing:      true,
	})
	workflows.Register(wh.worker, deliverer)
	workflows.RegisterPurge(wh.worker, activities.NewPurger(store, activities.PurgeConfig{Retention: cfg.Retention}))
	workflows.RegisterRecovery(wh.worker, activities.NewRecoverer(store, wh.replayer, 0, nil))
	// Eager: a resync's deliveries start on the worker running its page,
	// as the dispatcher's do (measured: the resync then sends as fast as
	// live deliveries run; without, at two thirds of that). Starts that
	// find the worker's slots full fall back to the task queue.
	snapshots := &workflows.Snapshots{Starter: wh.client, Policy: schedule, TaskQueue: cfg.TemporalTaskQueue, Eager: true}
	workflows.RegisterResync(wh.worker, activities.NewResyncer(store, snapshots, 0, nil))
	if err := wh.worker.Start(); err != nil {
		return nil, fmt.Errorf("start temporal worker: %w", err)
	}
	// Every worker brings the schedule to its configuration; workers
	// starting together may race on its update, which one of them wins.
	if err := workflows.EnsurePurgeSchedule(ctx, wh.client.ScheduleClient(), cfg.TemporalTaskQueue, cfg.purges()); err != nil {
		log.Warn("retention purge schedule", "schedule", workflows.PurgeScheduleIDFor(cfg.TemporalTaskQueue), "err", err)
	}
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	wh.stopDispatch, wh.dispatchDone = cancel, make(chan struct{})
	// Writes in this process wake the dispatcher at once; those of API
	// replicas elsewhere on PostgreSQL wake it by their NOTIFY, heard by
	// the store's listener. Polling the outbox's partial index, a probe of
	// one index entry when nothing waits, finds what a lost notification
	// (a listener reconnecting) leaves.
	store.ListenEvents(log)
	d := &workflows.Dispatcher{
		Store: store, Starter: wh.client, Policy: schedule, TaskQueue: cfg.TemporalTaskQueue, Log: log, Metrics: workflows.NewMetrics(reg),
		PollInterval: 100 * time.Millisecond,
	}
	go func() { defer close(wh.dispatchDone); d.Run(dctx) }()
	return wh, nil
}

// Replay implements api.Replayer.
func (wh *webhooks) Replay(ctx context.Context, d *models.WebhookDelivery) (string, string, error) {
	return wh.replayer.Replay(ctx, d)
}

// StartRecovery implements api.Recoverer.
func (wh *webhooks) StartRecovery(ctx context.Context, tenantID, endpointID string, since time.Time, until *time.Time) (*models.WebhookRecovery, error) {
	return wh.recoveries.Start(ctx, tenantID, endpointID, since, until)
}

// CheckRecovery implements api.Recoverer.
func (wh *webhooks) CheckRecovery(ctx context.Context, r *models.WebhookRecovery) (*models.WebhookRecovery, error) {
	return wh.recoveries.Check(ctx, r)
}

// StartResync implements api.Resyncer.
func (wh *webhooks) StartResync(ctx context.Context, tenantID, endpointID string) (*models.WebhookResync, error) {
	return wh.resyncs.Start(ctx, tenantID, endpointID)
}

// CheckResync implements api.Resyncer.
func (wh *webhooks) CheckResync(ctx context.Context, r *models.WebhookResync) (*models.WebhookResync, error) {
	return wh.resyncs.Check(ctx, r)
}

// check is the readiness probe of Temporal.
func (wh *webhooks) check(ctx context.Context) error {
	_, err := wh.client.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// stop stops the dispatcher, then the worker (letting running attempts
// finish), then the client and the embedded server.
func (wh *webhooks) stop() {
	if wh.stopDispatch != nil {
		wh.stopDispatch()
		<-wh.dispatchDone
	}
	if wh.worker != nil {
		wh.worker.Stop()
	}
	if wh.client != nil {
		wh.client.Close()
	}
	if wh.stopServer != nil {
		done := make(chan struct{})
		go func() { defer close(done); wh.stopServer() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
}
