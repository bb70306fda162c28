package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/models"
)

// The webhook group's targets.
const (
	targetWebhookRSS = 250_000_000           // bytes, idle, with API, worker, embedded Temporal and its UI
	targetWebhookP50 = 50 * time.Millisecond // change → receiver's first request, median
	targetWebhookP99 = 500 * time.Millisecond

	webhookIdleWait = 5 * time.Second
	webhookRate     = 20 // changes per second in the latency run
	webhookRateFor  = 10 * time.Second
	webhookGrace    = 10 * time.Second // wait for late deliveries after the last change
	webhookCreators = 16               // concurrent POSTs in the throughput run, and floor starters
	// webhookProfileSeconds is how long -profile webhooks profiles the
	// throughput run: set -webhook-n so that the run lasts longer.
	webhookProfileSeconds = 5
)

// webhookResult is the webhook group's outcome.
type webhookResult struct {
	idleRSS int64

	latencySent    int
	latencyMissing int
	p50, p99, max  time.Duration

	service       throughput
	serviceCreate time.Duration // how long the creates took
	peers         peersResult   // the peers' method
	floors        []throughput  // on the same embedded server
}

// runWebhooks runs and reports the webhook group and returns how many of
// its targets were missed; a group that cannot run misses one.
func (b *bench) runWebhooks(ctx context.Context, bin string) int {
	r, err := b.webhooks(ctx, bin)
	if err != nil {
		webhookGroupFailed(b.out, err)
		return 1
	}
	missed, _ := reportWebhooks(b.out, b.o, r)
	return missed
}

// webhooks runs the webhook group on SQLite against a service of its own,
// with the embedded Temporal server and its UI on: idle RSS, change →
// delivery latency at a steady rate, then recordhub's delivery rate and
// both floors on the same server.
func (b *bench) webhooks(ctx context.Context, bin string) (webhookResult, error) {
	var r webhookResult
	e, err := b.startEmbedded(ctx, bin, "webhooks")
	if err != nil {
		return r, err
	}
	svc := e.service
	defer stopService(b.out, "webhooks: recordhub", svc)

	select {
	case <-time.After(webhookIdleWait):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	if r.idleRSS, err = readRSS(svc.cmd.Process.Pid); err != nil {
		return r, fmt.Errorf("idle RSS: %w", err)
	}
	fmt.Fprintf(b.out, "webhooks: idle RSS %s\n", mb(r.idleRSS))

	t, err := newProdTenant(ctx, svc, e.adminKey)
	if err != nil {
		return r, err
	}
	defer t.rcv.Close()
	if err := t.warmUp(ctx, svc, 5); err != nil {
		return r, fmt.Errorf("warm-up: %w; the service's log is %s", err, svc.logPath)
	}
	if err := b.latencyRun(ctx, svc, t, &r); err != nil {
		return r, err
	}
	if r.service, r.serviceCreate, err = b.serviceThroughput(ctx, svc, t); err != nil {
		return r, err
	}
	if r.peers, err = b.peersRun(ctx, "webhooks", svc, processesCPU([]*service{svc}), t); err != nil {
		return r, err
	}
	r.floors, err = b.runFloors(ctx, "webhooks", e.temporalAddr, "default", b.o.webhookN, webhookCreators)
	return r, err
}

// embedded is `recordhub serve` as it runs with its embedded defaults:
// SQLite in a data directory of its own, the embedded Temporal server and
// its UI.
type embedded struct {
	*service
	// env is what it was started with; `recordhub tenant create` needs it.
	env          map[string]string
	adminKey     string
	temporalAddr string // the embedded Temporal frontend's
}

// startEmbedded starts `recordhub serve` with its embedded defaults on
// the data directory <tag>-data in the work directory, logging to
// <tag>-service.log there, with loopback receivers allowed.
func (b *bench) startEmbedded(ctx context.Context, bin, tag string) (*embedded, error) {
	return b.startEmbeddedWith(ctx, bin, tag, nil)
}

// startEmbeddedWith is startEmbedded with the variables extra on top.
func (b *bench) startEmbeddedWith(ctx context.Context, bin, tag string, extra map[string]string) (*embedded, error) {
	dataDir := filepath.Join(b.work, tag+"-data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	uiAddr, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	e := &embedded{adminKey: models.NewAPIKeySecret()}
	e.env = map[string]string{
		"RECORDHUB_DATA_DIR":            dataDir,
		"RECORDHUB_BOOTSTRAP_ADMIN_KEY": e.adminKey,
		"DATABASE_URL":                  "",
		"TEMPORAL_ADDRESS":              "",
		"RECORDHUB_TEMPORAL_UI_ADDR":    uiAddr,
		"RECORDHUB_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8",
	}
	for k, v := range extra {
		e.env[k] = v
	}
	fmt.Fprintf(b.out, "%s: starting recordhub serve (sqlite, embedded Temporal, UI on %s) ...\n", tag, uiAddr)
	if e.service, err = startService(ctx, bin, filepath.Join(b.work, tag+"-service.log"), e.env, b.o.profile["webhooks"]); err != nil {
		return nil, err
	}
	e.temporalAddr = "127.0.0.1:" + e.env["RECORDHUB_TEMPORAL_PORT"]
	return e, nil
}

// latencyRun creates webhookRate records a second for webhookRateFor and
// measures each create's response to the receiver's first request.
func (b *bench) latencyRun(ctx context.Context, svc *service, t prodTenant, r *webhookResult) error {
	fmt.Fprintf(b.out, "webhooks: change → delivery latency, %d changes/s for %s ...\n", webhookRate, webhookRateFor)
	var (
		mu    sync.Mutex
		sends []prodSent
		errs  []error
		wg    sync.WaitGroup
		tick  = time.NewTicker(time.Second / webhookRate)
	)
	for n := 0; n < webhookRate*int(webhookRateFor/time.Second); n++ {
		<-tick.C
		wg.Go(func() {
			id, err := createRecord(ctx, svc, t.f)
			done := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			sends = append(sends, prodSent{id, done})
		})
	}
	tick.Stop()
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("latency run: %d creates failed, the first: %w", len(errs), errs[0])
	}
	ids := make([]string, len(sends))
	for i, s := range sends {
		ids[i] = s.id
	}
	waitFor(ctx, len(ids), webhookGrace, func() int { return len(t.rcv.arrivals(ids)) })
	got := t.rcv.arrivals(ids)
	var lat []time.Duration
	for _, s := range sends {
		if at, ok := got[s.id]; ok {
			lat = append(lat, at.Sub(s.at))
		}
	}
	slices.Sort(lat)
	r.latencySent, r.latencyMissing = len(sends), len(sends)-len(lat)
	if len(lat) > 0 {
		r.p50, r.p99, r.max = percentile(lat, 0.50), percentile(lat, 0.99), lat[len(lat)-1]
	}
	return nil
}

// serviceThroughput creates -webhook-n records, webhookCreators at a time,
// and measures their deliveries: rate from the first to the last arrival,
// machine CPU from the first create until the worker has recorded every
// attempt.
func (b *bench) serviceThroughput(ctx context.Context, svc *service, t prodTenant) (throughput, time.Duration, error) {
	n := b.o.webhookN
	tp := throughput{label: "recordhub", sent: n}
	fmt.Fprintf(b.out, "webhooks: recordhub: %d records, %d at a time, to one endpoint ...\n", n, webhookCreators)
	attempts0, err := svc.metric(ctx, metricAttempts)
	if err != nil {
		return tp, 0, err
	}
	profiled := make(chan error, 1)
	if b.o.profile["webhooks"] {
		path := filepath.Join(b.work, "profile-webhooks.pprof")
		go func() { profiled <- svc.saveProfile(ctx, "profile", webhookProfileSeconds, path) }()
	} else {
		profiled <- nil
	}
	cpu0, _ := machineCPU()
	start := time.Now()
	ids, err := createMany(ctx, svc, t.f, n, webhookCreators)
	created := time.Since(start)
	if err != nil {
		return tp, created, fmt.Errorf("throughput run: %w", err)
	}
	waitFor(ctx, len(ids), 60*time.Second, func() int { return len(t.rcv.arrivals(ids)) })
	waitFor(ctx, n, 10*time.Second, func() int {
		a, _ := svc.metric(ctx, metricAttempts)
		return int(a - attempts0)
	})
	cpu1, _ := machineCPU()
	arr := times(t.rcv.arrivals(ids))
	tp.delivered, tp.span, tp.cpu = len(arr), span(arr), cpu1-cpu0
	if err := <-profiled; err != nil {
		return tp, created, err
	}
	if b.o.profile["webhooks"] {
		fmt.Fprintf(b.out, "webhooks: the service's CPU profile over the first %ds of the throughput run: go tool pprof -top %s %s\n",
			webhookProfileSeconds, filepath.Join(b.work, "recordhub"), filepath.Join(b.work, "profile-webhooks.pprof"))
	}
	fmt.Fprintf(b.out, "webhooks: recordhub: %d deliveries in %s (%.1f/s), machine CPU %s per delivery; creates took %s\n", tp.delivered,
		tp.span.Round(time.Millisecond), tp.rate(), ms(tp.cpuPer()), created.Round(time.Millisecond))
	return tp, created, nil
}
