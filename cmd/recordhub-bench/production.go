package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/cmd/internal/pgtemporal"
	"github.com/recordhub/recordhub/models"
)

// The production group's targets.
const (
	targetWorkerShare = 0.35            // of the attempts, each worker, with two or more
	targetRefused     = 0.01            // already_started ÷ started
	targetFairness    = 2 * time.Second // tenant B's create → first arrival
	targetScaleOut    = 1.0             // N workers' deliveries/s ÷ one worker's

	prodCreators = 16 // concurrent creates of tenant A's burst, and floor starters
	prodBEvents  = 5  // tenant B's events, one a second
	// prodStall ends a wait for deliveries that has seen none arrive for
	// this long: the drain has stopped, not slowed.
	prodStall = 60 * time.Second
	// prodWarmUp is each tenant's records delivered before measuring.
	prodWarmUp = 2
	// temporalProfileSeconds is how long -profile temporal profiles the
	// Temporal server from the start of each burst.
	temporalProfileSeconds = 10
)

// prodResult is the production group's outcome.
type prodResult struct {
	temporalAddr string
	floors       []throughput // on the same server, run first
	runs         []prodRun
}

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

	// machineCPU is the machine's CPU from A's first create to A's last
	// arrival, spent on cpuDeliveries deliveries (A's and B's by then).
	machineCPU    time.Duration
	cpuDeliveries int

	lagMax     float64 // seconds, sampled
	pg         pgPeak
	wall       time.Duration
	cpu        string // CPU time by process kind during the run
	loadBefore string
	loadAfter  string
	cost       costRun     // per delivery, by process and database
	peers      peersResult // the peers' method, after the burst
}

func (r prodRun) rate() float64 { return rate(r.deliveredA, r.spanA) }

// throughput is tenant A's deliveries as a row beside the floors.
func (r prodRun) throughput() throughput {
	return throughput{label: fmt.Sprintf("recordhub, %d worker(s)", r.workers), sent: r.sentA, delivered: r.deliveredA,
		span: r.spanA, cpu: r.machineCPU, cpuDeliveries: r.cpuDeliveries}
}

// production runs the production group: a separate Temporal server on
// PostgreSQL, then both floors (bare workflows) on it, then, for each worker
// count, one API process and that many workers on a fresh database and task
// queue under a two-tenant load.
//
// The floors run first: the configurations that follow then all meet a
// server that has already run a burst (the first of them does not pay its
// cold start alone, which would flatter the scale-out figure), and the
// floors have the emptiest tables, which can only make the ratio to it
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
	ts, stopTemporal, err := b.startTemporal(ctx, "production", "temporal.log")
	if err != nil {
		return r, err
	}
	defer stopTemporal()
	r.temporalAddr = ts.Address()
	if b.pgAdmin, err = sql.Open("pgx", adminURL); err != nil {
		return r, err
	}
	defer b.pgAdmin.Close()
	tdb, vdb := ts.Databases()
	b.costDBs = costDBs{tdb: "temporal", vdb: "visibility"}

	if r.floors, err = b.runFloors(ctx, "production", ts.Address(), ts.Namespace(), cmp.Or(b.o.baselineN, b.o.burst), prodCreators); err != nil {
		return r, err
	}

	for _, workers := range b.o.prodWorkers {
		run, err := b.prodRun(ctx, ts, workers)
		if err != nil {
			return r, fmt.Errorf("%d workers: %w", workers, err)
		}
		r.runs = append(r.runs, run)
	}
	return r, nil
}

// startTemporal starts a Temporal server on fresh databases of the -pg
// server, logging to logName in the work directory; stop ends it and drops
// its databases.
func (b *bench) startTemporal(ctx context.Context, tag, logName string) (ts *pgtemporal.Server, stop func(), err error) {
	adminURL, err := withDatabase(b.o.pgURL, "postgres")
	if err != nil {
		return nil, nil, err
	}
	tlog, err := os.Create(filepath.Join(b.work, logName))
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(b.out, "%s: starting a Temporal server on PostgreSQL %s (built once and cached; its log: %s) ...\n", tag, redact(adminURL), tlog.Name())
	opts := pgtemporal.Options{PostgresURL: adminURL, Log: tlog, LogLevel: "warn", DynamicConfig: b.o.temporalConfig, TrimVisibility: b.o.trimVisibility}
	if b.o.profile["temporal"] {
		if opts.PprofPort, err = freePort(); err != nil {
			tlog.Close()
			return nil, nil, err
		}
		b.temporalPprof = fmt.Sprintf("127.0.0.1:%d", opts.PprofPort)
	}
	ts, err = pgtemporal.Start(ctx, opts)
	if err != nil {
		tlog.Close()
		return nil, nil, err
	}
	return ts, func() {
		if err := ts.Stop(); err != nil {
			fmt.Fprintf(b.out, "%s: stopping Temporal: %v\n", tag, err)
		}
		tlog.Close()
	}, nil
}

// prodStack is one configuration's processes: a fresh database, the API,
// the workers and two tenants, each with its own receiver.
type prodStack struct {
	tag      string
	h        *dbHandle
	api      *service
	ws       []*service
	env      map[string]string // the processes', which `recordhub tenant create` needs
	adminKey string            // the bootstrap tenant's
	a, b     prodTenant
	closers  []func()
}

// close stops what startProdStack started, the last started first.
func (st *prodStack) close() {
	for i := len(st.closers) - 1; i >= 0; i-- {
		st.closers[i]()
	}
}

// startProdStack starts one API process and workers worker processes on a
// fresh database and task queue, and sets up tenants A and B.
func (b *bench) startProdStack(ctx context.Context, ts *pgtemporal.Server, workers int) (st *prodStack, err error) {
	st, err = b.startProdServices(ctx, b.bin, ts, fmt.Sprintf("prod-%dw", workers), workers)
	if err != nil {
		return st, err
	}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	// Tenant A is the bootstrap tenant, tenant B is made as an operator
	// would.
	keyB, err := harness.CreateTenant(ctx, b.bin, harness.ServiceEnv(st.env), "bench-b")
	if err != nil {
		return st, err
	}
	for _, t := range []struct {
		key string
		dst *prodTenant
	}{{st.adminKey, &st.a}, {keyB, &st.b}} {
		if *t.dst, err = newProdTenant(ctx, st.api, t.key); err != nil {
			return st, err
		}
		rcv := t.dst.rcv
		st.closers = append(st.closers, func() { rcv.Close() })
		if err := t.dst.warmUp(ctx, st.api, prodWarmUp); err != nil {
			return st, fmt.Errorf("warm-up: %w; the logs are in %s", err, b.work)
		}
	}
	return st, nil
}

// startProdServices starts bin as one API process and workers worker
// processes on a fresh database and task queue of ts, logging to
// <tag>-api.log and <tag>-worker<n>.log in the work directory; the stack's
// close stops them and drops the database.
func (b *bench) startProdServices(ctx context.Context, bin string, ts *pgtemporal.Server, tag string, workers int) (st *prodStack, err error) {
	st = &prodStack{tag: tag, adminKey: models.NewAPIKeySecret()}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.h, err = freshPostgres(ctx, b.o.pgURL); err != nil {
		return st, err
	}
	st.closers = append(st.closers, func() {
		if err := st.h.drop(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(b.out, "%s: %v\n", st.tag, err)
		}
	})
	st.env = map[string]string{
		"DATABASE_URL":                  st.h.url,
		"REDIS_URL":                     b.o.redisURL,
		"TEMPORAL_ADDRESS":              ts.Address(),
		"TEMPORAL_NAMESPACE":            ts.Namespace(),
		"RECORDHUB_TEMPORAL_TASK_QUEUE": "recordhub-bench-" + randomHex(4),
		"RECORDHUB_SECRET_KEY":          harness.NewSecretKey(),
		"RECORDHUB_BOOTSTRAP_ADMIN_KEY": st.adminKey,
		"RECORDHUB_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8",
		"RECORDHUB_DATA_DIR":            filepath.Join(b.work, st.tag+"-data"),
		// The API, the workers and Temporal's own pools must fit in the
		// local server's 100 connections (Temporal holds about 57).
		"RECORDHUB_DATABASE_MAX_CONNS": "10",
	}
	if err := os.MkdirAll(st.env["RECORDHUB_DATA_DIR"], 0o700); err != nil {
		return st, err
	}

	// The API first: it migrates the fresh database before any worker
	// opens it.
	fmt.Fprintf(b.out, "%s: starting serve --role api and %d × serve --role worker (task queue %s) ...\n", st.tag, workers, st.env["RECORDHUB_TEMPORAL_TASK_QUEUE"])
	if st.api, err = startService(ctx, bin, filepath.Join(b.work, st.tag+"-api.log"), maps.Clone(st.env), false, "--role", "api"); err != nil {
		return st, err
	}
	st.closers = append(st.closers, func() { stopService(b.out, st.tag+" api", st.api) })
	for i := range workers {
		log := filepath.Join(b.work, fmt.Sprintf("%s-worker%d.log", st.tag, i+1))
		w, err := startService(ctx, bin, log, maps.Clone(st.env), false, "--role", "worker")
		if err != nil {
			return st, err
		}
		st.ws = append(st.ws, w)
		st.closers = append(st.closers, func() { stopService(b.out, fmt.Sprintf("%s worker %d", st.tag, i+1), w) })
	}
	return st, nil
}

// prodRun measures one worker count on a fresh database and task queue:
// tenant A's burst, then tenant B's paced events while A's drain.
func (b *bench) prodRun(ctx context.Context, ts *pgtemporal.Server, workers int) (prodRun, error) {
	r := prodRun{workers: workers}
	st, err := b.startProdStack(ctx, ts, workers)
	if err != nil {
		return r, err
	}
	defer st.close()
	before, err := scrapeAll(ctx, st.ws)
	if err != nil {
		return r, err
	}
	requestsBefore := st.a.rcv.requests.Load() + st.b.rcv.requests.Load()
	cpu := startCPU(st.api, st.ws)
	cost0 := takeCost(ctx, b.pgAdmin)
	r.loadBefore = loadAverage()

	idsA, sentB, err := b.prodLoad(ctx, st, &r)
	if err != nil {
		return r, err
	}
	r.cpu = cpu.report(r.wall)
	r.loadAfter = loadAverage()
	after, err := scrapeAll(ctx, st.ws)
	if err != nil {
		return r, err
	}
	r.tally(st, idsA, sentB, before, after)
	dbs := maps.Clone(b.costDBs)
	dbs[st.h.name] = "recordhub"
	r.cost = costSince(ctx, b.pgAdmin, cost0, dbs, st.tag, r.deliveredA+len(sentB)-r.missingB)
	r.cost.report(b.out, 25)
	requests := st.a.rcv.requests.Load() + st.b.rcv.requests.Load() - requestsBefore
	fmt.Fprintf(b.out, "%s: %d of %d delivered in %s (%.1f/s), machine CPU %s per delivery; %d requests, %.0f attempts; B's latencies %s\n", st.tag,
		r.deliveredA, r.sentA, r.spanA.Round(time.Millisecond), r.rate(), ms(r.throughput().cpuPer()), requests, sum(r.attempts), durations(r.latB))
	// The peers' method last, on a settled service, outside the figures
	// above; the service is every process a delivery runs through.
	own := processesCPU(append([]*service{st.api}, st.ws...), "temporal-server", "postgres")
	settle(ctx, own)
	if r.peers, err = b.peersRun(ctx, st.tag, st.api, own, st.a); err != nil {
		return r, err
	}
	return r, nil
}

// prodLoad sends tenant A's burst and tenant B's paced events and waits
// for their deliveries and for the outbox to empty. The machine's CPU is
// read from A's first create until A's last arrival.
func (b *bench) prodLoad(ctx context.Context, st *prodStack, r *prodRun) (idsA []string, sentB []prodSent, err error) {
	fmt.Fprintf(b.out, "%s: tenant A creates %d records, %d at a time; then tenant B creates %d, one a second ...\n", st.tag, b.o.burst, prodCreators, prodBEvents)
	bBefore := st.b.rcv.delivered() // B's warm-up
	if b.temporalPprof != "" {
		path := filepath.Join(b.work, st.tag+"-temporal.pprof")
		go func() {
			if err := saveProfile(ctx, b.temporalPprof, "profile", temporalProfileSeconds, path); err != nil {
				fmt.Fprintf(b.out, "%s: Temporal server's profile: %v\n", st.tag, err)
			}
		}()
	}
	cpu0, _ := machineCPU()
	start := time.Now()
	idsA, err = createMany(ctx, st.api, st.a.f, b.o.burst, prodCreators)
	r.createA = time.Since(start)
	if err != nil {
		return nil, nil, fmt.Errorf("tenant A's burst: %w", err)
	}
	r.sentA = len(idsA)
	type paced struct {
		sent []prodSent
		err  error
	}
	bDone := make(chan paced, 1)
	go func() {
		s, err := createPaced(ctx, st.api, st.b.f, prodBEvents, time.Second)
		bDone <- paced{s, err}
	}()
	lagCtx, stopLag := context.WithCancel(ctx)
	defer stopLag()
	lagMax := sampleMax(lagCtx, st.ws, metricLag, 500*time.Millisecond)
	pgPeaks := samplePostgres(lagCtx, st.h, 500*time.Millisecond)

	waitProgress(ctx, len(idsA), prodStall, func() int { return len(st.a.rcv.arrivals(idsA)) })
	cpu1, _ := machineCPU()
	r.machineCPU = cpu1 - cpu0
	r.cpuDeliveries = len(st.a.rcv.arrivals(idsA)) + st.b.rcv.delivered() - bBefore
	pb := <-bDone
	if pb.err != nil {
		return nil, nil, fmt.Errorf("tenant B's creates: %w", pb.err)
	}
	idsB := make([]string, len(pb.sent))
	for i, s := range pb.sent {
		idsB[i] = s.id
	}
	waitProgress(ctx, len(idsB), 10*time.Second, func() int { return len(st.b.rcv.arrivals(idsB)) })
	// The counters are final once no event waits in the outbox.
	if err := waitOutboxEmpty(ctx, st.ws, 20*time.Second); err != nil {
		r.unsettled = err.Error()
	}
	stopLag()
	r.lagMax, r.pg = <-lagMax, <-pgPeaks
	r.wall = time.Since(start)
	return idsA, pb.sent, nil
}

// tally fills in the run's deliveries, latencies, duplicates and the
// workers' counters.
func (r *prodRun) tally(st *prodStack, idsA []string, sentB []prodSent, before, after []series) {
	arrA := st.a.rcv.arrivals(idsA)
	r.deliveredA, r.spanA = len(arrA), span(times(arrA))
	r.sentB = sentB
	ids := make([]string, len(sentB))
	for i, s := range sentB {
		ids[i] = s.id
	}
	arrB := st.b.rcv.arrivals(ids)
	for _, s := range sentB {
		t, ok := arrB[s.id]
		if !ok {
			r.missingB++
			r.latB = append(r.latB, -1)
			continue
		}
		r.latB = append(r.latB, t.Sub(s.at))
	}
	for _, t := range []prodTenant{st.a, st.b} {
		t.rcv.mu.Lock()
		r.duplicated += int(t.rcv.requests.Load()) - len(t.rcv.events)
		t.rcv.mu.Unlock()
	}
	for i := range after {
		r.attempts = append(r.attempts, after[i].sum(metricAttempts)-before[i].sum(metricAttempts))
		r.started += after[i].get(metricStarts, "result", "started") - before[i].get(metricStarts, "result", "started")
		r.refused += after[i].get(metricStarts, "result", "already_started") - before[i].get(metricStarts, "result", "already_started")
	}
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
