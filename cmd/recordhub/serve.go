package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/activities/throttle"
	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/accesslog"
	"github.com/recordhub/recordhub/api/console"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
)

// Env is what run needs from its process.
type Env struct {
	Stdout, Stderr io.Writer
	// Listening, when set, is called with the API's address once it accepts
	// connections (tests listen on port 0).
	Listening func(addr string)
	// TracerProvider, when set, traces the run instead of the OTEL_*
	// configuration (tests record spans in process).
	TracerProvider trace.TracerProvider
	// Redis, when set, is called with the rate limiter's Redis client once
	// it is built (tests watch its options and what it does with a hook).
	Redis func(*redis.Client)
}

// shutdownTimeout bounds the graceful part of a shutdown.
const shutdownTimeout = 30 * time.Second

// run runs the service until ctx ends, then shuts down gracefully:
// in-flight requests finish and queued access-log rows are written.
func run(ctx context.Context, cfg Config, env Env) error {
	log := slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))

	tr := &tracing{provider: env.TracerProvider, propagator: propagation.TraceContext{}}
	if env.TracerProvider == nil {
		var err error
		if tr, err = startTracing(ctx, cfg.Tracing); err != nil {
			return err
		}
		if tr != nil {
			log.Info("tracing on: exporting spans over OTLP", "protocol", cfg.Tracing.Protocol, "service", cfg.Tracing.ServiceName)
		}
	}
	// Deferred first, so it runs last: the spans of the shutdown are flushed too.
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tr.close(fctx); err != nil {
			log.Warn("traces not flushed", "error", err)
		}
	}()

	stopPprof, err := servePprof(cfg, log)
	if err != nil {
		return err
	}
	defer stopPprof()

	store, err := openStore(ctx, cfg, cfg.AutoMigrate)
	if err != nil {
		return err
	}
	defer store.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	checks := []api.Check{{Name: "database", Check: store.Ping}}

	var limiter api.Limiter = ratelimit.NewMemory(nil)
	// Endpoints' throttles: in this process without Redis, which holds
	// them only where this process sends every request (see
	// throttleHolder).
	var throttles activities.Throttle = throttle.NewMemory(nil)
	if cfg.RedisURL != "" {
		// Process-wide in go-redis: the last run to start owns it.
		redis.SetLogger(redisLogger{log})
		rdb, err := newRedisClient(ctx, cfg.RedisURL)
		if err != nil {
			return err
		}
		defer rdb.Close()
		if env.Redis != nil {
			env.Redis(rdb)
		}
		limiter = ratelimit.NewRedis(rdb, "recordhub:ratelimit:")
		throttles = throttle.NewRedis(rdb, "recordhub:throttle:")
		checks = append(checks, api.Check{Name: "redis", Check: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }})
	}

	dropped := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "recordhub_access_log_dropped_total", Help: "Access-log rows dropped because the queue was full, too many were kept while the database refused them, or it still refused them at shutdown.",
	})
	logs := accesslog.New(store, accesslog.Options{OnDrop: dropped.Inc, Log: log})
	reg.MustRegister(dropped, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "recordhub_access_log_queue_depth", Help: "Access-log rows waiting to be written, queued or kept for another try.",
	}, func() float64 { return float64(logs.Depth()) }))
	go logs.Run(ctx)

	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	go store.WatchChanges(watchCtx, log)

	wh, err := startWebhooks(ctx, cfg, store, reg, log, tr, throttles)
	if err != nil {
		return err
	}
	defer wh.stop()
	// Readiness by role: an API replica keeps taking writes while
	// Temporal is down, the outbox holding their events, so a load
	// balancer must not pull it; a worker without Temporal can do nothing.
	if cfg.runsWorker() {
		checks = append(checks, api.Check{Name: "temporal", Check: wh.check})
	}

	page, err := console.New("/console", console.Config{TemporalUIURL: cfg.TemporalUIURL, TemporalNamespace: cfg.TemporalNamespace})
	if err != nil {
		return err
	}
	srv := api.New(api.Deps{
		Store: store, Limiter: limiter, Logs: logs, Registry: reg, Log: log,
		DefaultRateLimit: cfg.DefaultRateLimit, Ready: checks,
		CheckURL: func(ctx context.Context, rawURL string) error {
			return activities.CheckURL(ctx, rawURL, cfg.WebhookAllowCIDRs)
		},
		Replayer:       wh,
		Recoverer:      wh,
		Resyncer:       wh,
		PublicURL:      cfg.PublicURL,
		OpsOnly:        !cfg.runsAPI(),
		IdempotencyTTL: cfg.IdempotencyTTL,
		Console:        page,

		TracerProvider: tr.tracerProvider(),
		Propagator:     tr.textPropagator(),
		Changes:        api.ChangesOptions{StreamsPerKey: cfg.ChangeStreamsPerKey, StreamsPerTenant: cfg.ChangeStreamsPerTenant},
		ThrottleUnheld: cfg.throttleUnheld(),
	})
	if cfg.runsAPI() {
		// Change streams follow commits made by other processes too.
		store.ListenEvents(log)
	}
	httpSrv := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := listenHTTP(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	// The first tenant is made last, once nothing of the start can fail: a
	// start that failed after printing a generated admin key would have
	// consumed it (the next start finds a tenant and prints none). Nothing
	// started above needs a tenant: the worker and the dispatcher work on
	// the events of existing ones.
	if err := bootstrapTenant(ctx, cfg, store, env.Stdout, log); err != nil {
		ln.Close()
		return err
	}
	log.Info("recordhub listening", "addr", ln.Addr().String(), "role", cfg.Role, "database", string(store.Dialect()), "redis", cfg.RedisURL != "")
	if env.Listening != nil {
		env.Listening(ln.Addr().String())
	}
	// Shutdown waits for every request, and a change stream never ends by
	// itself: streams end at once, and their clients resume elsewhere.
	httpSrv.RegisterOnShutdown(srv.EndStreams)
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(ln) }()

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("http server: %w", err)
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	var errs []error
	if err := httpSrv.Shutdown(shutdownCtx); err != nil {
		errs = append(errs, fmt.Errorf("http shutdown: %w", err))
	}
	if err := logs.Close(shutdownCtx); err != nil {
		errs = append(errs, fmt.Errorf("flush access logs: %w", err))
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, err)
	}
	log.Info("stopped")
	return errors.Join(errs...)
}

// listenHTTP listens on the API's address; its errors name the setting, as
// the embedded Temporal server's do, since a taken port (another recordhub
// still running, most often) is the usual first failure.
func listenHTTP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("RECORDHUB_HTTP_ADDR %s is in use; set another address", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("RECORDHUB_HTTP_ADDR %s: %w", addr, err)
	}
	return ln, nil
}

// bootstrapTenant creates tenant "default" when no tenant exists: with
// RECORDHUB_BOOTSTRAP_ADMIN_KEY as its admin key, else with a generated one
// printed once.
func bootstrapTenant(ctx context.Context, cfg Config, store *models.Store, stdout io.Writer, log *slog.Logger) error {
	created, secret, err := store.BootstrapTenant(ctx, "default", cfg.BootstrapAdminKey, cfg.DefaultRateLimit)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	switch {
	case created && cfg.BootstrapAdminKey != "":
		log.Info("created tenant default; its admin key is RECORDHUB_BOOTSTRAP_ADMIN_KEY")
	case created:
		fmt.Fprintf(stdout, "\nCreated tenant \"default\". Its admin key, shown once:\n\n    %s\n\n", secret)
	}
	return nil
}
