package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/pgtemporal"
	"github.com/recordhub/recordhub/models"
)

// The production group's targets.
const (
	targetProdRatio   = 0.80            // deliveries/s ÷ bare workflows/s
	targetWorkerShare = 0.35            // of the attempts, each worker, with two or more
	targetRefused     = 0.01            // already_started ÷ started
	targetFairness    = 2 * time.Second // tenant B's create → first arrival
	targetScaleOut    = 1.0             // N workers' deliveries/s ÷ one worker's

	prodCreators = 16 // concurrent creates of tenant A's burst, and baseline starters
	prodBEvents  = 5  // tenant B's events, one a second
	// prodStall ends a wait for deliveries that has seen none arrive for
	// this long: the drain has stopped, not slowed.
	prodStall = 60 * time.Second
	// prodWarmUp is each tenant's records delivered before measuring.
	prodWarmUp = 2
)

// prodResult is the production group's outcome.
type prodResult struct {
	temporalAddr string
	baseline     prodBaseline
	runs         []prodRun
}

// prodBaseline is the bare-workflow floor, once per group.
type prodBaseline struct {
	n, completed int
	span         time.Duration
	note         string
}

func (b prodBaseline) rate() float64 { return rate(b.completed, b.span) }

// prodRun is one worker count's outcome.
type prodRun struct {
	workers int

	sentA, deliveredA int
	spanA             time.Duration // A's first to last arrival
	createA           time.Duration // how long A's creates took
	sentB             []prodSent
	latB              []time.Duration // per B event, create response → first arrival; -1: never
	missingB          int
	duplicated        int // requests beyond the first per X-Webhook-Id, warm-up included

	attempts         []float64 // per worker, during the run
	started, refused float64   // dispatcher starts over all workers, during the run
	unsettled        string    // set when the outbox did not report empty after the drain

	lagMax     float64 // seconds, sampled
	pg         pgPeak
	wall       time.Duration
	cpu        string // CPU time by process kind during the run
	loadBefore string
	loadAfter  string
}

func (r prodRun) rate() float64 { return rate(r.deliveredA, r.spanA) }

// production runs the production group: a separate Temporal server on
// PostgreSQL, then the bare-workflow baseline on it, then, for each worker
// count, one API process and that many workers on a fresh database and task
// queue under a two-tenant load.
//
// The baseline runs first: the configurations that follow then all meet a
// server that has already run a burst (the first of them does not pay its
// cold start alone, which would flatter the scale-out figure), and the
// baseline has the emptiest tables, which can only make the ratio to it
// harder to reach.
func (b *bench) production(ctx context.Context) (prodResult, error) {
	var r prodResult
	if err := pingRedis(ctx, b.o.redisURL); err != nil {
		return r, err
	}
	adminURL, err := withDatabase(b.o.pgURL, "postgres")
	if err != nil {
		return r, err
	}
	tlog, err := os.Create(filepath.Join(b.work, "temporal.log"))
	if err != nil {
		return r, err
	}
	defer tlog.Close()
	fmt.Fprintf(b.out, "production: starting a Temporal server on PostgreSQL %s (built once and cached; its log: %s) ...\n", redact(adminURL), tlog.Name())
	ts, err := pgtemporal.Start(ctx, pgtemporal.Options{PostgresURL: adminURL, Log: tlog, LogLevel: "warn"})
	if err != nil {
		return r, err
	}
	defer func() {
		if err := ts.Stop(); err != nil {
			fmt.Fprintf(b.out, "production: stopping Temporal: %v\n", err)
		}
	}()
	r.temporalAddr = ts.Address()

	n := cmp.Or(b.o.baselineN, b.o.burst)
	fmt.Fprintf(b.out, "production: baseline: %d bare Temporal workflows (one POST activity each), %d starters ...\n", n, prodCreators)
	if r.baseline, err = b.prodBaseline(ctx, ts, n); err != nil {
		return r, err
	}
	fmt.Fprintf(b.out, "production: baseline: %d completions in %s (%.1f/s)\n", r.baseline.completed, r.baseline.span.Round(time.Millisecond), r.baseline.rate())

	for _, workers := range b.o.prodWorkers {
		run, err := b.prodRun(ctx, ts, workers)
		if err != nil {
			return r, fmt.Errorf("%d workers: %w", workers, err)
		}
		r.runs = append(r.runs, run)
	}
	return r, nil
}

// prodBaseline runs the temporal-baseline sub-command against ts, its
// workflows POSTing to a receiver of their own.
func (b *bench) prodBaseline(ctx context.Context, ts *pgtemporal.Server, n int) (prodBaseline, error) {
	r := prodBaseline{n: n}
	rcv, err := startReceiver()
	if err != nil {
		return r, err
	}
	defer rcv.srv.Close()
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	// A stuck baseline ends; one at 5/s still finishes.
	bctx, cancel := context.WithTimeout(ctx, time.Minute+time.Duration(n)*200*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(bctx, self, "temporal-baseline",
		"-addr", ts.Address(), "-namespace", ts.Namespace(),
		"-url", rcv.url("/baseline"), "-n", strconv.Itoa(n), "-c", strconv.Itoa(prodCreators))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	_ = os.WriteFile(filepath.Join(b.work, "baseline.log"), stderr.Bytes(), 0o600)
	var br baselineResult
	if err := json.Unmarshal(stdout.Bytes(), &br); err != nil {
		return r, fmt.Errorf("temporal-baseline: %v %v: %s", runErr, err, lastLines(stderr.String(), 10))
	}
	if runErr != nil {
		r.note = fmt.Sprintf("%d failed: %s", br.Failed, br.FirstErr)
	}
	rcv.mu.Lock()
	times := make([]time.Time, 0, len(rcv.baseline))
	for _, t := range rcv.baseline {
		times = append(times, t)
	}
	rcv.mu.Unlock()
	r.completed, r.span = len(times), span(times)
	return r, nil
}

// prodRun measures one worker count on a fresh database and task queue.
func (b *bench) prodRun(ctx context.Context, ts *pgtemporal.Server, workers int) (prodRun, error) {
	r := prodRun{workers: workers}
	tag := fmt.Sprintf("prod-%dw", workers)
	h, err := freshPostgres(ctx, b.o.pgURL)
	if err != nil {
		return r, err
	}
	defer func() {
		if err := h.drop(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(b.out, "%s: %v\n", tag, err)
		}
	}()
	adminKey := models.NewAPIKeySecret()
	env := map[string]string{
		"DATABASE_URL":                  h.url,
		"REDIS_URL":                     b.o.redisURL,
		"TEMPORAL_ADDRESS":              ts.Address(),
		"TEMPORAL_NAMESPACE":            ts.Namespace(),
		"RECORDHUB_TEMPORAL_TASK_QUEUE": "recordhub-bench-" + randomHex(4),
		"RECORDHUB_SECRET_KEY":          newSecretKey(),
		"RECORDHUB_BOOTSTRAP_ADMIN_KEY": adminKey,
		"RECORDHUB_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8",
		"RECORDHUB_DATA_DIR":            filepath.Join(b.work, tag+"-data"),
		// The API, the workers and Temporal's own pools must fit in the
		// local server's 100 connections (Temporal holds about 57).
		"RECORDHUB_DATABASE_MAX_CONNS": "10",
	}
	if err := os.MkdirAll(env["RECORDHUB_DATA_DIR"], 0o700); err != nil {
		return r, err
	}

	// The API first: it migrates the fresh database before any worker
	// opens it.
	fmt.Fprintf(b.out, "%s: starting serve --role api and %d × serve --role worker (task queue %s) ...\n", tag, workers, env["RECORDHUB_TEMPORAL_TASK_QUEUE"])
	api, err := startService(ctx, b.bin, filepath.Join(b.work, tag+"-api.log"), maps.Clone(env), false, "--role", "api")
	if err != nil {
		return r, err
	}
	defer stopService(b.out, tag+" api", api)
	ws := make([]*service, workers)
	for i := range ws {
		log := filepath.Join(b.work, fmt.Sprintf("%s-worker%d.log", tag, i+1))
		if ws[i], err = startService(ctx, b.bin, log, maps.Clone(env), false, "--role", "worker"); err != nil {
			return r, err
		}
		defer stopService(b.out, fmt.Sprintf("%s worker %d", tag, i+1), ws[i])
	}

	// Tenant A is the bootstrap tenant, tenant B is made as an operator
	// would, each with its own receiver.
	keyB, err := createTenant(ctx, b.bin, env, "bench-b")
	if err != nil {
		return r, err
	}
	var tenants [2]prodTenant
	for i, key := range []string{adminKey, keyB} {
		if tenants[i], err = newProdTenant(ctx, api, key); err != nil {
			return r, err
		}
		defer tenants[i].rcv.srv.Close()
	}
	a, bt := tenants[0], tenants[1]
	for _, t := range tenants {
		if err := t.warmUp(ctx, api); err != nil {
			return r, fmt.Errorf("warm-up: %w; the logs are in %s", err, b.work)
		}
	}

	before, err := scrapeAll(ctx, ws)
	if err != nil {
		return r, err
	}
	requestsBefore := a.rcv.requests.Load() + bt.rcv.requests.Load()
	cpu := startCPU(api, ws)
	r.loadBefore = loadAverage()

	fmt.Fprintf(b.out, "%s: tenant A creates %d records, %d at a time; then tenant B creates %d, one a second ...\n", tag, b.o.burst, prodCreators, prodBEvents)
	start := time.Now()
	idsA, err := createMany(ctx, api, a.f, b.o.burst, prodCreators)
	r.createA = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("tenant A's burst: %w", err)
	}
	r.sentA = len(idsA)
	type sentB struct {
		sent []prodSent
		err  error
	}
	bDone := make(chan sentB, 1)
	go func() {
		s, err := createPaced(ctx, api, bt.f, prodBEvents, time.Second)
		bDone <- sentB{s, err}
	}()
	lagCtx, stopLag := context.WithCancel(ctx)
	defer stopLag()
	lagMax := sampleMax(lagCtx, ws, metricLag, 500*time.Millisecond)
	pgPeaks := samplePostgres(lagCtx, h, 500*time.Millisecond)

	waitProgress(ctx, len(idsA), prodStall, func() int { return len(a.rcv.arrivals(idsA)) })
	sb := <-bDone
	if sb.err != nil {
		stopLag()
		return r, fmt.Errorf("tenant B's creates: %w", sb.err)
	}
	r.sentB = sb.sent
	idsB := make([]string, len(sb.sent))
	for i, s := range sb.sent {
		idsB[i] = s.id
	}
	waitProgress(ctx, len(idsB), 10*time.Second, func() int { return len(bt.rcv.arrivals(idsB)) })
	// The counters are final once no event waits in the outbox.
	if err := waitOutboxEmpty(ctx, ws, 20*time.Second); err != nil {
		r.unsettled = err.Error()
	}
	stopLag()
	r.lagMax, r.pg = <-lagMax, <-pgPeaks
	r.wall = time.Since(start)
	r.cpu = cpu.report(r.wall)
	r.loadAfter = loadAverage()
	after, err := scrapeAll(ctx, ws)
	if err != nil {
		return r, err
	}

	arrA := a.rcv.arrivals(idsA)
	times := make([]time.Time, 0, len(arrA))
	for _, t := range arrA {
		times = append(times, t)
	}
	r.deliveredA, r.spanA = len(arrA), span(times)
	arrB := bt.rcv.arrivals(idsB)
	for _, s := range sb.sent {
		t, ok := arrB[s.id]
		if !ok {
			r.missingB++
			r.latB = append(r.latB, -1)
			continue
		}
		r.latB = append(r.latB, t.Sub(s.at))
	}
	for _, t := range tenants {
		t.rcv.mu.Lock()
		r.duplicated += int(t.rcv.requests.Load()) - len(t.rcv.events)
		t.rcv.mu.Unlock()
	}
	for i := range ws {
		r.attempts = append(r.attempts, after[i].sum(metricAttempts)-before[i].sum(metricAttempts))
		r.started += after[i].get(metricStarts, "result", "started") - before[i].get(metricStarts, "result", "started")
		r.refused += after[i].get(metricStarts, "result", "already_started") - before[i].get(metricStarts, "result", "already_started")
	}
	requests := a.rcv.requests.Load() + bt.rcv.requests.Load() - requestsBefore
	fmt.Fprintf(b.out, "%s: %d of %d delivered in %s (%.1f/s); %d requests, %.0f attempts; B's latencies %s\n", tag, r.deliveredA, r.sentA,
		r.spanA.Round(time.Millisecond), r.rate(), requests, sum(r.attempts), durations(r.latB))
	return r, nil
}

// waitOutboxEmpty waits until every worker reports no pending event.
func waitOutboxEmpty(ctx context.Context, ws []*service, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		pending := 0.0
		for _, w := range ws {
			m, err := w.scrape(ctx)
			if err != nil {
				return err
			}
			pending = max(pending, m.get(metricPending))
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s still %.0f after %s", metricPending, pending, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sampleMax polls a gauge on every worker until ctx ends and then sends
// the highest value seen.
func sampleMax(ctx context.Context, ws []*service, name string, every time.Duration) <-chan float64 {
	out := make(chan float64, 1)
	go func() {
		hi := 0.0
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for _, w := range ws {
				if m, err := w.scrape(ctx); err == nil {
					hi = max(hi, m.get(name))
				}
			}
			select {
			case <-ctx.Done():
				out <- hi
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// pgPeak is the most connections the PostgreSQL server held at once
// during a run, by database: max_connections is shared by the Temporal
// server, every recordhub process's pool and whatever else runs there.
type pgPeak struct {
	total, recordhub, temporal, rest int
	limit                            int // max_connections
}

// samplePostgres polls pg_stat_activity through h's admin connection until
// ctx ends and then sends the peaks.
func samplePostgres(ctx context.Context, h *dbHandle, every time.Duration) <-chan pgPeak {
	out := make(chan pgPeak, 1)
	go func() {
		var p pgPeak
		_ = h.admin.QueryRowContext(ctx, "SELECT setting::int FROM pg_settings WHERE name = 'max_connections'").Scan(&p.limit)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			var total, mine, temporal int
			err := h.admin.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE datname = $1),
				count(*) FILTER (WHERE datname LIKE 'rh\_temporal\_%') FROM pg_stat_activity WHERE backend_type = 'client backend'`, h.name).
				Scan(&total, &mine, &temporal)
			if err == nil {
				p.total, p.recordhub, p.temporal = max(p.total, total), max(p.recordhub, mine), max(p.temporal, temporal)
				p.rest = max(p.rest, total-mine-temporal)
			}
			select {
			case <-ctx.Done():
				out <- p
				return
			case <-t.C:
			}
		}
	}()
	return out
}
