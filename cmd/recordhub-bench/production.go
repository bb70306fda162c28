package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

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

// The series the production group reads from each worker's /metrics.
const (
	metricAttempts = "recordhub_webhook_attempts_total"
	metricStarted  = `recordhub_webhook_workflow_starts_total{result="started"}`
	metricRefused  = `recordhub_webhook_workflow_starts_total{result="already_started"}`
	metricPending  = "recordhub_outbox_pending_events"
	metricLag      = "recordhub_outbox_lag_seconds"
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

// prodSent is one create and when its response came.
type prodSent struct {
	id string
	at time.Time
}

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

// prodTenant is one tenant's fixture and where its deliveries arrive.
type prodTenant struct {
	f   fixture
	rcv *receiver
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
		r.started += after[i][metricStarted] - before[i][metricStarted]
		r.refused += after[i][metricRefused] - before[i][metricRefused]
	}
	requests := a.rcv.requests.Load() + bt.rcv.requests.Load() - requestsBefore
	fmt.Fprintf(b.out, "%s: %d of %d delivered in %s (%.1f/s); %d requests, %.0f attempts; B's latencies %s\n", tag, r.deliveredA, r.sentA,
		r.spanA.Round(time.Millisecond), r.rate(), requests, sum(r.attempts), durations(r.latB))
	return r, nil
}

// stopService stops a service and says so when it would not stop cleanly.
func stopService(out io.Writer, name string, s *service) {
	if err := s.stop(40 * time.Second); err != nil {
		fmt.Fprintf(out, "%s: stopping: %v\n", name, err)
	}
}

// createTenant runs `recordhub tenant create NAME --json` with the
// service's environment and returns the new tenant's admin key.
func createTenant(ctx context.Context, bin string, env map[string]string, name string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "tenant", "create", name, "--json")
	cmd.Env = serviceEnv(env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("recordhub tenant create: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var t struct {
		AdminKey string `json:"admin_key"`
	}
	if err := json.Unmarshal(out, &t); err != nil || t.AdminKey == "" {
		return "", fmt.Errorf("recordhub tenant create printed %q", out)
	}
	return t.AdminKey, nil
}

// newProdTenant gives a tenant a key without a rate limit, a module and an
// endpoint subscribed to record_created on a receiver of its own.
func newProdTenant(ctx context.Context, api *service, adminKey string) (prodTenant, error) {
	var t prodTenant
	var err error
	if t.f, err = setUp(ctx, api, adminKey); err != nil {
		return t, err
	}
	if t.rcv, err = startReceiver(); err != nil {
		return t, err
	}
	err = api.call(ctx, "POST", "/api/admin/webhook-endpoints", adminKey, map[string]any{
		"url": t.rcv.url("/hook"), "events": []string{"record_created"},
	}, nil)
	if err != nil {
		t.rcv.srv.Close()
		return t, fmt.Errorf("create webhook endpoint: %w", err)
	}
	return t, nil
}

// warmUp sends a few deliveries through the whole path before measuring.
func (t prodTenant) warmUp(ctx context.Context, api *service) error {
	ids, err := createMany(ctx, api, t.f, prodWarmUp, 1)
	if err != nil {
		return err
	}
	waitProgress(ctx, len(ids), prodStall, func() int { return len(t.rcv.arrivals(ids)) })
	if got := len(t.rcv.arrivals(ids)); got < len(ids) {
		return fmt.Errorf("%d of %d deliveries arrived within %s", got, len(ids), prodStall)
	}
	return nil
}

// createMany creates n records, conc at a time, and returns their ids.
func createMany(ctx context.Context, api *service, f fixture, n, conc int) ([]string, error) {
	var (
		mu   sync.Mutex
		ids  = make([]string, 0, n)
		errs []error
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				id, err := createRecord(ctx, api, f)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids = append(ids, id)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return ids, fmt.Errorf("%d of %d creates failed, the first: %w", len(errs), n, errs[0])
	}
	return ids, nil
}

// createPaced creates n records, one every interval, the first at once.
func createPaced(ctx context.Context, api *service, f fixture, n int, every time.Duration) ([]prodSent, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var sent []prodSent
	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-tick.C:
			}
		}
		id, err := createRecord(ctx, api, f)
		if err != nil {
			return sent, err
		}
		sent = append(sent, prodSent{id, time.Now()})
	}
	return sent, nil
}

// waitProgress waits until count() reaches n, or it has not grown for
// stall, or ctx ends.
func waitProgress(ctx context.Context, n int, stall time.Duration, count func() int) {
	last, since := count(), time.Now()
	for last < n && time.Since(since) < stall && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		if c := count(); c != last {
			last, since = c, time.Now()
		}
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
			pending = max(pending, m[metricPending])
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
					hi = max(hi, m[name])
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

// series are the samples of one /metrics page, by series as exposed:
// `name` or `name{label="value",...}`.
type series map[string]float64

// sum adds up every sample of the metric name, whatever its labels.
func (m series) sum(name string) float64 {
	total := 0.0
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			total += v
		}
	}
	return total
}

// scrape reads every sample from /metrics.
func (s *service) scrape(ctx context.Context) (series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url("/metrics"), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	m := series{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		// Label values may hold spaces; the value follows the last one.
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape metrics: %w", err)
	}
	return m, nil
}

func scrapeAll(ctx context.Context, ws []*service) ([]series, error) {
	out := make([]series, len(ws))
	for i, w := range ws {
		var err error
		if out[i], err = w.scrape(ctx); err != nil {
			return nil, fmt.Errorf("worker %d: %w", i+1, err)
		}
	}
	return out, nil
}

// cpuSnapshot is CPU time by process kind at one moment, to say where a
// run's CPU went on a machine of few cores.
type cpuSnapshot struct {
	api     *service
	workers []*service
	at      map[string]time.Duration
}

func startCPU(api *service, ws []*service) *cpuSnapshot {
	c := &cpuSnapshot{api: api, workers: ws}
	c.at = c.read()
	return c
}

func (c *cpuSnapshot) read() map[string]time.Duration {
	m := map[string]time.Duration{
		"temporal": commandCPU("temporal-server"),
		"postgres": commandCPU("postgres"),
	}
	m["api"], _ = processCPU(c.api.cmd.Process.Pid)
	for i, w := range c.workers {
		m[fmt.Sprintf("worker %d", i+1)], _ = processCPU(w.cmd.Process.Pid)
	}
	return m
}

// report prints the CPU used since the snapshot.
func (c *cpuSnapshot) report(wall time.Duration) string {
	now := c.read()
	parts := []string{fmt.Sprintf("api %.0f s", (now["api"] - c.at["api"]).Seconds())}
	for i := range c.workers {
		k := fmt.Sprintf("worker %d", i+1)
		parts = append(parts, fmt.Sprintf("%s %.0f s", k, (now[k]-c.at[k]).Seconds()))
	}
	parts = append(parts,
		fmt.Sprintf("Temporal %.0f s", (now["temporal"]-c.at["temporal"]).Seconds()),
		fmt.Sprintf("postgres ≥ %.0f s", (now["postgres"]-c.at["postgres"]).Seconds()))
	return fmt.Sprintf("CPU %s in %.0f s wall", strings.Join(parts, ", "), wall.Seconds())
}

// loadAverage is the machine's 1-minute load average, from /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// pingRedis checks that the Redis the services will share answers.
func pingRedis(ctx context.Context, rawURL string) error {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		return fmt.Errorf("redis at %s does not answer: %w", redact(rawURL), err)
	}
	return nil
}

// withDatabase returns a PostgreSQL URL naming another database on the same
// server.
func withDatabase(rawURL, db string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("-pg: %w", err)
	}
	u.Path = "/" + db
	return u.String(), nil
}

// newSecretKey is a RECORDHUB_SECRET_KEY: 32 random bytes, base64.
func newSecretKey() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// durations prints latencies in milliseconds, "never" for -1.
func durations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		if d < 0 {
			parts[i] = "never"
		} else {
			parts[i] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	return strings.Join(parts, ", ") + " ms"
}

// reportProduction prints the production group's table and returns how
// many targets were missed.
func reportProduction(w io.Writer, o options, r prodResult) int {
	fmt.Fprintf(w, "\nproduction shape: recordhub built -tags noembedtemporal; a separate Temporal server (v1.32.1, PostgreSQL persistence, task-queue fairness on) at %s; Redis %s\n", r.temporalAddr, redact(o.redisURL))
	fmt.Fprintf(w, "per row group: one serve --role api and N serve --role worker processes, a fresh database and task queue; tenant A creates %d records %d at a time, then tenant B %d, one a second\n", o.burst, prodCreators, prodBEvents)
	note := ""
	if r.baseline.note != "" {
		note = "; " + r.baseline.note
	}
	fmt.Fprintf(w, "bare Temporal workflows/s (run first, same server, %d workflows, one POST activity each, %d starters): %.1f (%d completed in %s%s)\n\n",
		r.baseline.n, prodCreators, r.baseline.rate(), r.baseline.completed, r.baseline.span.Round(time.Millisecond), note)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workers\tmeasure\tvalue\ttarget\tresult\tnotes")
	missed, total := 0, 0
	row := func(workers, label, value, target string, ok bool, note string) {
		total++
		if !ok {
			missed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", workers, label, value, target, verdict(ok), note)
	}
	info := func(workers, label, value, note string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t%s\n", workers, label, value, note)
	}
	var one float64
	for _, run := range r.runs {
		n := strconv.Itoa(run.workers)
		if run.workers == 1 {
			one = run.rate()
		}
		info(n, "deliveries/s (tenant A)", fmt.Sprintf("%.1f", run.rate()),
			fmt.Sprintf("%d delivered, first to last arrival %s; creates took %s (%.0f/s)", run.deliveredA, run.spanA.Round(time.Millisecond),
				run.createA.Round(time.Millisecond), float64(run.sentA)/run.createA.Seconds()))
		ratio := 0.0
		if r.baseline.rate() > 0 {
			ratio = run.rate() / r.baseline.rate()
		}
		row(n, "ratio to bare Temporal", fmt.Sprintf("%.2f×", ratio), fmt.Sprintf("≥ %s×", trimRatio(targetProdRatio)), ratio >= targetProdRatio, "")
		missing := run.sentA - run.deliveredA + run.missingB
		row(n, "missing deliveries", strconv.Itoa(missing), "0", missing == 0 && run.sentA > 0,
			fmt.Sprintf("A %d of %d, B %d of %d", run.sentA-run.deliveredA, run.sentA, run.missingB, len(run.sentB)))
		row(n, "duplicated deliveries", strconv.Itoa(run.duplicated), "0", run.duplicated == 0, "requests beyond the first per X-Webhook-Id")

		total := sum(run.attempts)
		shares := make([]string, len(run.attempts))
		counts := make([]string, len(run.attempts))
		lowest := 1.0
		for i, a := range run.attempts {
			share := 0.0
			if total > 0 {
				share = a / total
			}
			lowest = min(lowest, share)
			shares[i] = fmt.Sprintf("%.0f%%", 100*share)
			counts[i] = fmt.Sprintf("%.0f", a)
		}
		attemptsNote := "attempts " + strings.Join(counts, " + ")
		if run.workers >= 2 {
			row(n, "attempts per worker", strings.Join(shares, " / "), fmt.Sprintf("each ≥ %.0f%%", 100*targetWorkerShare), lowest >= targetWorkerShare, attemptsNote)
		} else {
			info(n, "attempts per worker", strings.Join(shares, " / "), attemptsNote)
		}
		refused := 0.0
		if run.started > 0 {
			refused = run.refused / run.started
		}
		row(n, "refused starts", fmt.Sprintf("%.1f%%", 100*refused), fmt.Sprintf("< %.0f%%", 100*targetRefused), refused < targetRefused && run.started > 0,
			fmt.Sprintf("%.0f already_started of %.0f started", run.refused, run.started))
		worst := time.Duration(0)
		for _, l := range run.latB {
			if l < 0 {
				worst = -1
				break
			}
			worst = max(worst, l)
		}
		worstText := "never"
		if worst >= 0 {
			worstText = ms(worst)
		}
		row(n, "tenant B create → arrival, max", worstText, "≤ "+ms(targetFairness), worst >= 0 && worst <= targetFairness && len(run.latB) == prodBEvents,
			"each: "+durations(run.latB))
		lagNote := "recordhub_outbox_lag_seconds sampled every 0.5 s (the gauge is refreshed every 5 s)"
		if run.unsettled != "" {
			lagNote += "; " + run.unsettled
		}
		info(n, "outbox lag, max", fmt.Sprintf("%.1f s", run.lagMax), lagNote)
		info(n, "PostgreSQL connections, peak", fmt.Sprintf("%d of %d", run.pg.total, run.pg.limit),
			fmt.Sprintf("client backends; peaks apart: this run's recordhub database %d, rh_temporal_* databases %d (this Temporal server's and any other's), the rest %d",
				run.pg.recordhub, run.pg.temporal, run.pg.rest))
		info(n, "machine", "load "+run.loadBefore+" → "+run.loadAfter, run.cpu)
	}
	if one > 0 {
		for _, run := range r.runs {
			if run.workers == 1 {
				continue
			}
			x := run.rate() / one
			row(fmt.Sprintf("%d vs 1", run.workers), "deliveries/s scale-out", fmt.Sprintf("%.2f×", x), fmt.Sprintf("≥ %s×", trimRatio(targetScaleOut)), x >= targetScaleOut, "")
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d of %d production targets met\n", total-missed, total)
	return missed
}
