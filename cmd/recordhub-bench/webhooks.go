package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/recordhub/recordhub/models"
)

// The webhook group's targets.
const (
	targetWebhookRSS   = 250_000_000           // bytes, idle, with API, worker, embedded Temporal and its UI
	targetWebhookP50   = 50 * time.Millisecond // change → receiver's first request, median
	targetWebhookP99   = 500 * time.Millisecond
	targetWebhookRatio = 0.80

	webhookIdleWait    = 5 * time.Second
	webhookRate        = 20 // changes per second in the latency run
	webhookRateFor     = 10 * time.Second
	webhookGrace       = 10 * time.Second // wait for late deliveries after the last change
	webhookThroughputN = 600              // records (and baseline workflows) in the throughput runs
	webhookCreators    = 16               // concurrent POSTs in the throughput run
)

// webhookResult is the webhook group's outcome.
type webhookResult struct {
	idleRSS int64

	latencySent    int
	latencyMissing int
	p50, p99, max  time.Duration

	serviceN, serviceMissing int
	serviceSpan              time.Duration // first to last arrival
	serviceCreate            time.Duration // how long the creates took
	baselineN, baselineMiss  int
	baselineSpan             time.Duration
	baselineNote             string
}

func (r webhookResult) serviceRate() float64 { return rate(r.serviceN, r.serviceSpan) }

func (r webhookResult) baselineRate() float64 { return rate(r.baselineN, r.baselineSpan) }

// runWebhooks runs and reports the webhook group and returns how many of
// its targets were missed; a group that cannot run misses one.
func (b *bench) runWebhooks(ctx context.Context, bin string) int {
	r, err := b.webhooks(ctx, bin)
	if err != nil {
		webhookGroupFailed(b.out, err)
		return 1
	}
	missed, _ := reportWebhooks(b.out, r)
	return missed
}

// webhooks runs the webhook group on SQLite against a service of its own,
// with the embedded Temporal server and its UI on.
func (b *bench) webhooks(ctx context.Context, bin string) (webhookResult, error) {
	var r webhookResult
	dataDir := filepath.Join(b.work, "webhooks-data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return r, err
	}
	uiAddr, err := freePort()
	if err != nil {
		return r, err
	}
	adminKey := models.NewAPIKeySecret()
	env := map[string]string{
		"RECORDHUB_DATA_DIR":            dataDir,
		"RECORDHUB_BOOTSTRAP_ADMIN_KEY": adminKey,
		"DATABASE_URL":                  "",
		"TEMPORAL_ADDRESS":              "",
		"RECORDHUB_TEMPORAL_UI_ADDR":    uiAddr,
		"RECORDHUB_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8",
	}
	fmt.Fprintf(b.out, "webhooks: starting recordhub serve (sqlite, embedded Temporal, UI on %s) ...\n", uiAddr)
	svc, err := startService(ctx, bin, filepath.Join(b.work, "webhooks-service.log"), env, false)
	if err != nil {
		return r, err
	}
	defer func() {
		if err := svc.stop(40 * time.Second); err != nil {
			fmt.Fprintf(b.out, "webhooks: stopping recordhub: %v\n", err)
		}
	}()

	// 1. Idle RSS.
	select {
	case <-time.After(webhookIdleWait):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	if r.idleRSS, err = readRSS(svc.cmd.Process.Pid); err != nil {
		return r, fmt.Errorf("idle RSS: %w", err)
	}
	fmt.Fprintf(b.out, "webhooks: idle RSS %s\n", mb(r.idleRSS))

	rcv, err := startReceiver()
	if err != nil {
		return r, err
	}
	defer rcv.srv.Close()
	f, err := setUp(ctx, svc, adminKey)
	if err != nil {
		return r, err
	}
	var ep struct {
		ID string `json:"id"`
	}
	if err := svc.call(ctx, "POST", "/api/admin/webhook-endpoints", adminKey, map[string]any{
		"url": rcv.url("/hook"), "events": []string{"record_created"},
	}, &ep); err != nil {
		return r, fmt.Errorf("create webhook endpoint: %w", err)
	}
	// Warm up: a few deliveries through the whole path before measuring.
	var warm []string
	for range 5 {
		id, err := createRecord(ctx, svc, f)
		if err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
		warm = append(warm, id)
	}
	waitFor(ctx, len(warm), 30*time.Second, func() int { return len(rcv.arrivals(warm)) })
	if got := len(rcv.arrivals(warm)); got < len(warm) {
		return r, fmt.Errorf("warm-up: %d of %d deliveries arrived within 30s; the service's log is %s", got, len(warm), svc.logPath)
	}

	// 2. Latency at a steady rate.
	fmt.Fprintf(b.out, "webhooks: change → delivery latency, %d changes/s for %s ...\n", webhookRate, webhookRateFor)
	type sent struct {
		id   string
		done time.Time
	}
	var (
		mu    sync.Mutex
		sends []sent
		errs  []error
		wg    sync.WaitGroup
		tick  = time.NewTicker(time.Second / webhookRate)
	)
	for n := 0; n < webhookRate*int(webhookRateFor/time.Second); n++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := createRecord(ctx, svc, f)
			done := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			sends = append(sends, sent{id, done})
		}()
	}
	tick.Stop()
	wg.Wait()
	if len(errs) > 0 {
		return r, fmt.Errorf("latency run: %d creates failed, the first: %w", len(errs), errs[0])
	}
	ids := make([]string, len(sends))
	for i, s := range sends {
		ids[i] = s.id
	}
	waitFor(ctx, len(ids), webhookGrace, func() int { return len(rcv.arrivals(ids)) })
	got := rcv.arrivals(ids)
	var lat []time.Duration
	for _, s := range sends {
		if t, ok := got[s.id]; ok {
			lat = append(lat, t.Sub(s.done))
		}
	}
	slices.Sort(lat)
	r.latencySent = len(sends)
	r.latencyMissing = len(sends) - len(lat)
	if len(lat) > 0 {
		r.p50 = percentile(lat, 0.50)
		r.p99 = percentile(lat, 0.99)
		r.max = lat[len(lat)-1]
	}

	// 3a. The service's sustained delivery rate.
	fmt.Fprintf(b.out, "webhooks: %d records, %d at a time, to one endpoint ...\n", webhookThroughputN, webhookCreators)
	start := time.Now()
	ids, err = createMany(ctx, svc, f, webhookThroughputN, webhookCreators)
	r.serviceCreate = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("throughput run: %w", err)
	}
	waitFor(ctx, len(ids), 60*time.Second, func() int { return len(rcv.arrivals(ids)) })
	arr := rcv.arrivals(ids)
	ts := make([]time.Time, 0, len(arr))
	for _, t := range arr {
		ts = append(ts, t)
	}
	r.serviceN, r.serviceMissing, r.serviceSpan = len(ts), len(ids)-len(ts), span(ts)
	fmt.Fprintf(b.out, "webhooks: service: %d deliveries in %s (%.0f/s), creates took %s\n", r.serviceN, r.serviceSpan.Round(time.Millisecond), r.serviceRate(), r.serviceCreate.Round(time.Millisecond))

	// 3b. The baseline, on the same embedded server.
	fmt.Fprintf(b.out, "webhooks: baseline: %d bare Temporal workflows (one POST activity each) on the same server ...\n", webhookThroughputN)
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	bctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(bctx, self, "temporal-baseline",
		"-addr", "127.0.0.1:"+env["RECORDHUB_TEMPORAL_PORT"], "-namespace", "default",
		"-url", rcv.url("/baseline"), "-n", fmt.Sprint(webhookThroughputN), "-c", fmt.Sprint(webhookCreators))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var br baselineResult
	if err := json.Unmarshal(stdout.Bytes(), &br); err != nil {
		return r, fmt.Errorf("temporal-baseline: %v %v: %s", runErr, err, lastLines(stderr.String(), 10))
	}
	if runErr != nil {
		r.baselineNote = fmt.Sprintf("%d failed: %s", br.Failed, br.FirstErr)
	}
	rcv.mu.Lock()
	ts = ts[:0]
	for _, t := range rcv.baseline {
		ts = append(ts, t)
	}
	rcv.mu.Unlock()
	r.baselineN, r.baselineMiss, r.baselineSpan = len(ts), webhookThroughputN-len(ts), span(ts)
	fmt.Fprintf(b.out, "webhooks: baseline: %d completions in %s (%.0f/s)\n", r.baselineN, r.baselineSpan.Round(time.Millisecond), r.baselineRate())
	return r, nil
}
