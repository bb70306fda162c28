package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/cmd/internal/harness"
)

// The noisy-neighbour mode's loads: what tenant A does in each scenario.
const (
	noisyEndpoints     = 100       // A's endpoints in fanout and filters: the most a tenant may have
	noisyFanoutWrites  = 10        // A's records in fanout: 1,000 deliveries
	noisyFilterSize    = 1_000_000 // bytes of each filter value, tried first
	noisyFilterFloor   = 64        // the smallest filter value worth measuring
	noisyFilterWrites  = 120
	noisyHold          = 40 * time.Second // how long A's receiver holds a request: past the 30 s attempt timeout
	noisyHangWrites    = 1200
	noisyResyncRecords = 2611
	noisyCreators      = 16 // concurrent creates of A's quick writes

	noisyBWarmUp = 2                // B's deliveries before measuring
	noisyGrace   = 60 * time.Second // for B's deliveries after its last create
)

// noisyScenario is one load of tenant A.
type noisyScenario struct {
	name, about string
	// load sets tenant A up and starts its load; B's creates start when
	// it returns. wait, when not nil, returns when A's load has ended.
	load func(ctx context.Context, st *noisyStage) (wait func() error, err error)
}

var noisyScenarios = map[string]noisyScenario{
	"baseline": {"baseline", "A idle", func(context.Context, *noisyStage) (func() error, error) { return nil, nil }},
	"fanout": {"fanout", fmt.Sprintf("A: %d endpoints on one module, %d records over B's window", noisyEndpoints, noisyFanoutWrites),
		loadFanout},
	"filters": {"filters", fmt.Sprintf("A: %d endpoints with a huge filter that never matches, %d records over B's window", noisyEndpoints, noisyFilterWrites),
		loadFilters},
	"hanging": {"hanging", fmt.Sprintf("A: one endpoint whose receiver holds each request %s, %d records first", noisyHold, noisyHangWrites),
		loadHanging},
	"resync": {"resync", fmt.Sprintf("A: a resync of one endpoint over %d records", noisyResyncRecords), loadResync},
}

// noisyBinary is one recordhub binary the mode measures.
type noisyBinary struct {
	label, path, about string
}

// noisyRun is one scenario's outcome on one binary.
type noisyRun struct {
	b         latencies // tenant B's create → first request
	aInWindow int       // requests A's receivers got from B's first create to its last
	aRequests int       // requests A's receivers got in all
	doubled   int       // (event, attempt) pairs A's receivers got more than once
	doubledEx []string  // some of them
	// The outbox's most events waiting for their starts, and its oldest
	// one's age (a gauge refreshed every 5 s), sampled every 0.5 s from
	// B's first create until B's last request or noisyGrace: high while
	// B waits, the dispatcher is where B waits.
	pendingMax, lagMax float64
	note               string
	wall               time.Duration
	err                error
}

// runNoisy measures each scenario on a fresh service, on each binary in
// turn (the order alternating from one scenario to the next, so neither
// binary always meets the machine as the other left it), and prints the
// table.
func (b *bench) runNoisy(ctx context.Context, root string) error {
	if b.o.noisyProduction {
		if err := pingRedis(ctx, b.o.redisURL); err != nil {
			return err
		}
	}
	bins, err := b.noisyBinaries(ctx, root)
	if err != nil {
		return err
	}
	for _, bin := range bins {
		fmt.Fprintf(b.out, "%s: %s\n", bin.label, bin.about)
	}
	rows := make([][]noisyRun, len(b.o.noisyScenarios))
	failed := 0
	for i, name := range b.o.noisyScenarios {
		rows[i] = make([]noisyRun, len(bins))
		for k := range bins {
			j := k
			if i%2 == 1 {
				j = len(bins) - 1 - k
			}
			rows[i][j] = b.noisyRun(ctx, noisyScenarios[name], bins[j])
			if rows[i][j].err != nil {
				failed++
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	reportNoisy(b.out, b.o, bins, rows)
	if failed > 0 {
		return fmt.Errorf("noisy: %d runs failed", failed)
	}
	return nil
}

// noisyBinaries returns the binary to compare with, when there is one,
// then the binary measured. For the production shape they are built as
// production images are, without the embedded Temporal server.
func (b *bench) noisyBinaries(ctx context.Context, root string) ([]noisyBinary, error) {
	var tags []string
	flags := ""
	if b.o.noisyProduction {
		tags, flags = []string{"noembedtemporal"}, " -tags noembedtemporal"
	}
	var bins []noisyBinary
	switch {
	case b.o.noisyBefore != "":
		fmt.Fprintf(b.out, "building ./cmd/recordhub%s at %s ...\n", flags, b.o.noisyBefore)
		bin, commit, err := buildRevision(ctx, root, b.work, b.o.noisyBefore, tags...)
		if err != nil {
			return nil, err
		}
		bins = append(bins, noisyBinary{"before", bin, fmt.Sprintf("%s (%s)", b.o.noisyBefore, commit)})
	case b.o.noisyBeforeBin != "":
		bins = append(bins, noisyBinary{"before", b.o.noisyBeforeBin, b.o.noisyBeforeBin})
	}
	after := noisyBinary{"after", b.o.noisyBin, b.o.noisyBin}
	if after.path == "" {
		fmt.Fprintf(b.out, "building ./cmd/recordhub%s ...\n", flags)
		bin, err := buildService(ctx, root, b.work, "recordhub", tags...)
		if err != nil {
			return nil, err
		}
		after.path, after.about = bin, "the working tree "+describeTree(ctx, root)
	}
	if len(bins) == 0 {
		after.label = "measured"
	}
	return append(bins, after), nil
}

// buildRevision builds ./cmd/recordhub as it is at the git revision rev,
// with the build tags given, from `git archive` (the repository and its
// worktrees are left as they are), and returns the binary and the commit.
func buildRevision(ctx context.Context, root, dir, rev string, tags ...string) (bin, commit string, err error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("-noisy-before %q: not a commit here: %w", rev, err)
	}
	commit = strings.TrimSpace(string(out))
	// The module may sit below the repository's top.
	prefix, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--show-prefix").Output()
	if err != nil {
		return "", "", fmt.Errorf("git rev-parse --show-prefix: %w", err)
	}
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(src)
	var stderr bytes.Buffer
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", src)
	archive.Stderr, untar.Stderr = &stderr, &stderr
	if untar.Stdin, err = archive.StdoutPipe(); err != nil {
		return "", "", err
	}
	if err := untar.Start(); err != nil {
		return "", "", fmt.Errorf("tar: %w", err)
	}
	aerr := archive.Run()
	if err := errors.Join(aerr, untar.Wait()); err != nil {
		return "", "", fmt.Errorf("git archive %s | tar -x: %w: %s", commit[:12], err, bytes.TrimSpace(stderr.Bytes()))
	}
	bin, err = buildService(ctx, filepath.Join(src, strings.TrimSpace(string(prefix))), dir, "recordhub-"+commit[:12], tags...)
	return bin, commit[:12], err
}

// describeTree names the working tree's commit, and says when it has
// changes on top.
func describeTree(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "(not a git checkout)"
	}
	s := "(" + strings.TrimSpace(string(out))
	if status, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(status)) > 0 {
		s += " with uncommitted changes"
	}
	return s + ")"
}

// noisyStage is one run's service and tenants.
type noisyStage struct {
	tag    string
	out    func(format string, args ...any)
	svc    *noisyService
	a      fixture     // tenant A's, the bootstrap tenant
	aRcvs  []*receiver // A's endpoints' receivers
	b      prodTenant  // with its endpoint on every module
	window time.Duration
	note   string
}

// receiverA starts a receiver for one of A's endpoints.
func (st *noisyStage) receiverA(hold time.Duration) (*receiver, error) {
	r, err := startHoldingReceiver(hold)
	if err == nil {
		st.aRcvs = append(st.aRcvs, r)
	}
	return r, err
}

// subscribeA subscribes a new receiver of A's to record_created on A's
// write module, with extra settings.
func (st *noisyStage) subscribeA(ctx context.Context, hold time.Duration, set func(*client.EndpointInput)) (string, error) {
	r, err := st.receiverA(hold)
	if err != nil {
		return "", err
	}
	in := client.EndpointInput{URL: r.URL("/hook"), Events: []string{"record_created"}, ModuleIDs: []string{st.a.writeModule}}
	if set != nil {
		set(&in)
	}
	return subscribe(ctx, st.svc.api, st.svc.adminKey, in)
}

// paceA creates n records of A's spread over B's window, the first at
// once, and returns the wait for the last.
func (st *noisyStage) paceA(ctx context.Context, n int) func() error {
	done := make(chan error, 1)
	go func() {
		_, err := createPaced(ctx, st.svc.api, st.a, n, st.window/time.Duration(n))
		done <- err
	}()
	return func() error {
		if err := <-done; err != nil {
			return fmt.Errorf("tenant A's writes: %w", err)
		}
		return nil
	}
}

// close stops A's receivers first, so that attempts they hold end at once,
// then the service, then B's receiver.
func (st *noisyStage) close() {
	for _, r := range st.aRcvs {
		r.Close()
	}
	if st.svc != nil {
		st.svc.stop()
	}
	if st.b.rcv != nil {
		st.b.rcv.Close()
	}
}

func loadFanout(ctx context.Context, st *noisyStage) (func() error, error) {
	for range noisyEndpoints {
		if _, err := st.subscribeA(ctx, 0, nil); err != nil {
			return nil, err
		}
	}
	return st.paceA(ctx, noisyFanoutWrites), nil
}

// loadFilters subscribes A's endpoints with a filter on the title as large
// as the service takes, which no record's title matches.
func loadFilters(ctx context.Context, st *noisyStage) (func() error, error) {
	filter := func(i, size int) func(*client.EndpointInput) {
		v := fmt.Sprintf("%03d", i) + strings.Repeat("x", max(size-3, 0))
		return func(in *client.EndpointInput) { in.Filter = map[string]any{"title": v} }
	}
	size, err := largestAccepted(noisyFilterSize, noisyFilterFloor, func(size int) error {
		_, err := st.subscribeA(ctx, 0, filter(0, size))
		return err
	})
	if err != nil {
		return nil, err
	}
	st.note = fmt.Sprintf("filter values of %d bytes", size)
	st.out("%s: %s\n", st.tag, st.note)
	for i := 1; i < noisyEndpoints; i++ {
		if _, err := st.subscribeA(ctx, 0, filter(i, size)); err != nil {
			return nil, err
		}
	}
	return st.paceA(ctx, noisyFilterWrites), nil
}

// largestAccepted calls try with size, halving it while the service
// refuses it as too large (413, or 422 from a service that bounds filter
// values), down to floor; it returns the size accepted.
func largestAccepted(size, floor int, try func(size int) error) (int, error) {
	for {
		err := try(size)
		if err == nil {
			return size, nil
		}
		var se *client.Error
		if !errors.As(err, &se) || (se.Status != http.StatusRequestEntityTooLarge && se.Status != http.StatusUnprocessableEntity) || size/2 < floor {
			return 0, err
		}
		size /= 2
	}
}

// loadHanging gives A one endpoint whose receiver holds every request
// longer than an attempt may take, and writes A's records before B's
// creates start.
func loadHanging(ctx context.Context, st *noisyStage) (func() error, error) {
	if _, err := st.subscribeA(ctx, noisyHold, nil); err != nil {
		return nil, err
	}
	start := time.Now()
	if _, err := createMany(ctx, st.svc.api, st.a, noisyHangWrites, noisyCreators); err != nil {
		return nil, fmt.Errorf("tenant A's writes: %w", err)
	}
	st.note = fmt.Sprintf("A's %d writes took %s", noisyHangWrites, time.Since(start).Round(time.Millisecond))
	st.out("%s: %s\n", st.tag, st.note)
	return nil, nil
}

// loadResync writes A's records before A has an endpoint (so they are not
// delivered), then subscribes one and starts its resync.
func loadResync(ctx context.Context, st *noisyStage) (func() error, error) {
	start := time.Now()
	if _, err := createMany(ctx, st.svc.api, st.a, noisyResyncRecords, noisyCreators); err != nil {
		return nil, fmt.Errorf("tenant A's records: %w", err)
	}
	if err := waitOutboxEmpty(ctx, st.svc.ws, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("tenant A's records: %w", err)
	}
	seeded := time.Since(start)
	id, err := st.subscribeA(ctx, 0, func(in *client.EndpointInput) { in.Events = []string{"record_created", "record_snapshot"} })
	if err != nil {
		return nil, err
	}
	rs, err := st.svc.api.as(st.svc.adminKey).StartResync(ctx, id)
	if err != nil {
		return nil, err
	}
	st.note = fmt.Sprintf("resync %s of %d records (seeded in %s)", rs.ID, rs.Total, seeded.Round(time.Millisecond))
	st.out("%s: %s\n", st.tag, st.note)
	return nil, nil
}

// noisyRun runs one scenario on a fresh service: tenant B with its
// endpoint, warmed up; tenant A's load; B's paced creates; then B's
// deliveries, until the last has come or noisyGrace has passed.
func (b *bench) noisyRun(ctx context.Context, sc noisyScenario, bin noisyBinary) (r noisyRun) {
	started := time.Now()
	out := func(format string, args ...any) { fmt.Fprintf(b.out, format, args...) }
	st := &noisyStage{tag: "noisy-" + sc.name + "-" + bin.label, out: out,
		window: time.Duration(b.o.noisyBN-1) * b.o.noisyBEvery}
	defer func() {
		st.close()
		r.wall = time.Since(started)
		if r.err != nil {
			out("%s: failed after %s: %v\n", st.tag, r.wall.Round(time.Second), r.err)
		}
	}()
	out("%s: %s\n", st.tag, sc.about)
	if st.svc, r.err = b.startNoisyService(ctx, bin.path, st.tag); r.err != nil {
		return r
	}
	keyB, err := harness.CreateTenant(ctx, bin.path, harness.ServiceEnv(st.svc.env), "bench-b")
	if err != nil {
		r.err = err
		return r
	}
	if st.b, r.err = newProdTenant(ctx, st.svc.api, keyB); r.err != nil {
		return r
	}
	if r.err = st.b.warmUp(ctx, st.svc.api, noisyBWarmUp); r.err != nil {
		r.err = fmt.Errorf("tenant B's warm-up: %w; the logs are %s", r.err, st.svc.logs)
		return r
	}
	if st.a, r.err = setUp(ctx, st.svc.api, st.svc.adminKey); r.err != nil {
		return r
	}
	wait, err := sc.load(ctx, st)
	if err != nil {
		r.err = err
		return r
	}
	out("%s: tenant B creates %d records, one every %s ...\n", st.tag, b.o.noisyBN, b.o.noisyBEvery)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	ws := st.svc.ws
	pendingMax, lagMax := sampleMax(sampleCtx, ws, metricPending, 500*time.Millisecond), sampleMax(sampleCtx, ws, metricLag, 500*time.Millisecond)
	from := time.Now()
	sent, err := createPaced(ctx, st.svc.api, st.b.f, b.o.noisyBN, b.o.noisyBEvery)
	to := time.Now()
	if err != nil {
		r.err = fmt.Errorf("tenant B's creates: %w", err)
		return r
	}
	if wait != nil {
		if r.err = wait(); r.err != nil {
			return r
		}
	}
	ids := make([]string, len(sent))
	for i, s := range sent {
		ids[i] = s.id
	}
	waitFor(ctx, len(ids), noisyGrace, func() int { return len(st.b.rcv.arrivals(ids)) })
	stopSampling()
	r.pendingMax, r.lagMax = <-pendingMax, <-lagMax
	arr := st.b.rcv.arrivals(ids)
	lat := make([]time.Duration, len(sent))
	for i, s := range sent {
		lat[i] = noArrival
		if t, ok := arr[s.id]; ok {
			lat[i] = t.Sub(s.at)
		}
	}
	r.b = summarize(lat)
	for _, rc := range st.aRcvs {
		r.aInWindow += rc.arrivedBetween(from, to)
		r.aRequests += int(rc.requests.Load())
		n, ex := rc.doubled()
		r.doubled += n
		r.doubledEx = append(r.doubledEx, ex...)
	}
	r.note = st.note
	out("%s: B %s; A: %d requests in B's window (%d in all), %d (event, attempt) pairs twice; outbox: at most %.0f events waiting, oldest %.0f s; %s\n", st.tag,
		r.b, r.aInWindow, r.aRequests, r.doubled, r.pendingMax, r.lagMax, time.Since(started).Round(time.Second))
	for _, ex := range r.doubledEx[:min(len(r.doubledEx), 3)] {
		out("%s: twice: %s\n", st.tag, ex)
	}
	return r
}

// noArrival is the latency of a create whose request never came: above
// every other. (A latency may be below zero: the request can come before
// the create's answer is read.)
const noArrival = time.Duration(1<<63 - 1)

// latencies summarises tenant B's create → first request times.
type latencies struct {
	n, never      int           // creates, and those whose request never came
	p50, p99, max time.Duration // nearest rank; noArrival for a request that never came
}

// summarize takes one latency per create, noArrival for a request that
// never came.
func summarize(lat []time.Duration) latencies {
	s := latencies{n: len(lat), p50: noArrival, p99: noArrival, max: noArrival}
	if len(lat) == 0 {
		return s
	}
	all := slices.Sorted(slices.Values(lat))
	for _, d := range all {
		if d == noArrival {
			s.never++
		}
	}
	s.p50, s.p99, s.max = percentile(all, 0.50), percentile(all, 0.99), all[len(all)-1]
	return s
}

// String is p50 / p99 / max, and how many never came.
func (l latencies) String() string {
	f := func(d time.Duration) string {
		if d == noArrival {
			return "never"
		}
		return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
	}
	s := fmt.Sprintf("%s / %s / %s ms", f(l.p50), f(l.p99), f(l.max))
	if l.never > 0 {
		s += fmt.Sprintf(", %d of %d never", l.never, l.n)
	}
	return s
}
