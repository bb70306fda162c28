package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
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

func rate(n int, span time.Duration) float64 {
	if n < 2 || span <= 0 {
		return 0
	}
	return float64(n-1) / span.Seconds()
}

func (r webhookResult) serviceRate() float64  { return rate(r.serviceN, r.serviceSpan) }
func (r webhookResult) baselineRate() float64 { return rate(r.baselineN, r.baselineSpan) }

// receiver is the webhooks' endpoint, in the bench's process: it answers
// 204 and keeps the first arrival of every delivery, by the record the
// event is about (service deliveries on /hook) or by X-Bench-Id (the
// baseline's, on /baseline).
type receiver struct {
	mu       sync.Mutex
	records  map[string]time.Time // record id → first arrival
	events   map[string]bool      // X-Webhook-Id seen
	baseline map[string]time.Time
	requests atomic.Int64
	srv      *http.Server
	addr     string
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{records: map[string]time.Time{}, events: map[string]bool{}, baseline: map[string]time.Time{}, addr: ln.Addr().String()}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	r.requests.Add(1)
	body, _ := io.ReadAll(req.Body)
	switch req.URL.Path {
	case "/hook":
		var ev struct {
			Record struct {
				ID string `json:"id"`
			} `json:"record"`
		}
		_ = json.Unmarshal(body, &ev)
		id := req.Header.Get("X-Webhook-Id")
		r.mu.Lock()
		r.events[id] = true
		if _, seen := r.records[ev.Record.ID]; !seen && ev.Record.ID != "" {
			r.records[ev.Record.ID] = now
		}
		r.mu.Unlock()
	case "/baseline":
		id := req.Header.Get("X-Bench-Id")
		r.mu.Lock()
		if _, seen := r.baseline[id]; !seen && id != "" {
			r.baseline[id] = now
		}
		r.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) url(path string) string { return "http://" + r.addr + path }

// arrivals returns the first arrival of each record in ids that has one.
func (r *receiver) arrivals(ids []string) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(ids))
	for _, id := range ids {
		if t, ok := r.records[id]; ok {
			out[id] = t
		}
	}
	return out
}

// waitFor waits until count() reaches n or the limit passes.
func waitFor(ctx context.Context, n int, limit time.Duration, count func() int) {
	deadline := time.Now().Add(limit)
	for count() < n && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// span returns the first and last of ts.
func span(ts []time.Time) time.Duration {
	if len(ts) < 2 {
		return 0
	}
	lo, hi := ts[0], ts[0]
	for _, t := range ts[1:] {
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	return hi.Sub(lo)
}

// createRecord POSTs one record and returns its id.
func createRecord(ctx context.Context, svc *service, f fixture) (string, error) {
	var rec struct {
		ID string `json:"id"`
	}
	var body map[string]any
	_ = json.Unmarshal([]byte(recordBody), &body)
	if err := svc.call(ctx, "POST", "/api/modules/"+f.writeModule+"/records", f.key, body, &rec); err != nil {
		return "", err
	}
	if rec.ID == "" {
		return "", errors.New("create record: no id in the answer")
	}
	return rec.ID, nil
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

// percentile of sorted ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	i := int(float64(len(ds))*p+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// reportWebhooks prints the webhook group's table and returns how many of
// its targets were missed, and how many there are.
func reportWebhooks(w io.Writer, r webhookResult) (missed, total int) {
	fmt.Fprintf(w, "\nwebhooks (sqlite, embedded Temporal server and Web UI in the service's process; receiver in the bench process answering 204)\n")
	fmt.Fprintf(w, "latency: %d changes/s for %s, from the create's response to the receiver's first request; throughput: %d records created %d at a time, first to last arrival, against %d bare Temporal workflows (one activity POSTing 1 KB) on the same server\n\n",
		webhookRate, webhookRateFor, webhookThroughputN, webhookCreators, webhookThroughputN)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tvalue\ttarget\tresult\tnotes")
	row := func(label, value, target string, ok bool, note string) {
		total++
		if !ok {
			missed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", label, value, target, verdict(ok), note)
	}
	row("idle RSS (API, worker, Temporal, UI)", mb(r.idleRSS), "< "+mb(targetWebhookRSS), r.idleRSS > 0 && r.idleRSS < targetWebhookRSS,
		fmt.Sprintf("VmRSS %s after ready", webhookIdleWait))
	latNote := fmt.Sprintf("%d changes, max %s", r.latencySent, ms(r.max))
	hasLat := r.latencySent > r.latencyMissing
	row("change → delivery p50", ms(r.p50), "< "+ms(targetWebhookP50), hasLat && r.p50 < targetWebhookP50, latNote)
	row("change → delivery p99", ms(r.p99), "< "+ms(targetWebhookP99), hasLat && r.p99 < targetWebhookP99, "")
	row("missing deliveries", fmt.Sprintf("%d of %d", r.latencyMissing, r.latencySent), "0", r.latencySent > 0 && r.latencyMissing == 0,
		fmt.Sprintf("waited %s after the last change", webhookGrace))
	fmt.Fprintf(tw, "service deliveries/s\t%.0f\t-\t-\t%d delivered in %s, %d missing; creates took %s\n", r.serviceRate(), r.serviceN,
		r.serviceSpan.Round(time.Millisecond), r.serviceMissing, r.serviceCreate.Round(time.Millisecond))
	bnote := fmt.Sprintf("%d completed in %s, %d missing", r.baselineN, r.baselineSpan.Round(time.Millisecond), r.baselineMiss)
	if r.baselineNote != "" {
		bnote += "; " + r.baselineNote
	}
	fmt.Fprintf(tw, "bare Temporal workflows/s\t%.0f\t-\t-\t%s\n", r.baselineRate(), bnote)
	ratio := 0.0
	if r.baselineRate() > 0 {
		ratio = r.serviceRate() / r.baselineRate()
	}
	row("deliveries/s ratio to bare Temporal", fmt.Sprintf("%.2f×", ratio), fmt.Sprintf("≥ %s×", trimRatio(targetWebhookRatio)),
		ratio >= targetWebhookRatio && r.serviceMissing == 0, "")
	tw.Flush()
	fmt.Fprintf(w, "\n%d of %d webhook targets met\n", total-missed, total)
	return missed, total
}

// webhookGroupFailed is printed when the group cannot run.
func webhookGroupFailed(w io.Writer, err error) {
	fmt.Fprintf(w, "\nwebhooks: FAIL: %s\n", strings.TrimSpace(err.Error()))
}
