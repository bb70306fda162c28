// Command recordhub-chaos runs recordhub in its production shape and
// breaks it while it works, then checks that nothing was lost.
//
// It builds ./cmd/recordhub -tags noembedtemporal and starts, all on
// loopback: a PostgreSQL cluster of its own (initdb in a temporary
// directory), used by recordhub and by a separate Temporal server; a Redis
// of its own; two `serve --role api` replicas and two `serve --role worker`
// processes; and a receiver in its own process that records every request.
// Two tenants, each with a module and an endpoint on the receiver, create
// records at a steady rate over both replicas, each write under one
// Idempotency-Key that it keeps across its retries (load.go), while, one
// after the other
// (each -every after the previous one ended), a worker and an API replica
// are killed with SIGKILL and started again, Temporal is killed and started
// again, Redis is down for 10 s, a worker is frozen with SIGSTOP for 45 s,
// and PostgreSQL is stopped with -m immediate and started again. A
// supervisor starts again any process that exits on its own, as an
// orchestrator would, and says so.
//
// Then the load stops, the harness waits until the stack is quiet and
// prints writes acknowledged, unacknowledged (applied or not) and lost,
// duplicate records, deliveries missing and doubled, attempt rows left in
// flight, rows against the requests the receiver saw, and commit → first
// request latency. It exits 1 unless no acknowledged write was lost, no
// write left more than one record, no delivery is missing, at most 1 %
// were doubled, no row is left in flight, and every request the receiver
// saw has its row.
//
// Run it with `make chaos` from the repository root (CHAOSFLAGS='-cycles 2').
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordhub-chaos:", err)
	}
	os.Exit(code)
}

// options are the command line's.
type options struct {
	cycles       int
	every        time.Duration
	rate         float64 // creates per second per tenant
	failShare    float64
	redisDown    time.Duration
	freeze       time.Duration
	warmUp, tail time.Duration
	settle       time.Duration
	retryInitial time.Duration
	keep         bool
	apis         int
	workers      int
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	o := options{apis: 2, workers: 2}
	fs := flag.NewFlagSet("recordhub-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.cycles, "cycles", 1, "fault cycles; each runs the six faults in turn")
	fs.DurationVar(&o.every, "every", 20*time.Second, "pause between the end of one fault and the start of the next")
	fs.Float64Var(&o.rate, "rate", 10, "creates per second, per tenant")
	fs.Float64Var(&o.failShare, "fail-share", 0, "share of requests the receiver answers 500, to exercise retries (e.g. 0.02)")
	fs.DurationVar(&o.redisDown, "redis-down", 10*time.Second, "how long Redis stays down")
	fs.DurationVar(&o.freeze, "freeze", 45*time.Second, "how long a worker stays frozen (SIGSTOP)")
	fs.DurationVar(&o.warmUp, "warm-up", 10*time.Second, "load before the first fault")
	fs.DurationVar(&o.tail, "tail", 20*time.Second, "load after the last fault")
	fs.DurationVar(&o.settle, "settle", 6*time.Minute, "how long to wait, after the load, for the stack to be quiet; an attempt lost with its worker is retried after its 30 s timeout and the first retry delay")
	fs.DurationVar(&o.retryInitial, "retry-initial", 0, "RECORDHUB_WEBHOOK_RETRY_INITIAL of the services (0: the service's default, 60s)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (logs of every process, the PostgreSQL cluster) even when the run passes")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: recordhub-chaos [flags]\n\nRuns recordhub's production shape under load while it is broken; see the package doc.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.cycles < 0 || o.rate <= 0 || o.failShare < 0 || o.failShare >= 1 || o.every < 0 || o.settle <= 0 {
		return o, errors.New("-cycles must be at least 0, -rate and -settle positive, -fail-share in [0, 1)")
	}
	return o, nil
}

// run is main without the process; it returns the exit status: 0 passed,
// 1 failed or broke, 2 bad flags.
func run(ctx context.Context, args []string, stdout io.Writer) (code int, err error) {
	o, err := parseOptions(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0, nil
	}
	if err != nil {
		return 2, err
	}
	logf := newLog(stdout, time.Now())
	work, err := os.MkdirTemp("", "recordhub-chaos-")
	if err != nil {
		return 1, err
	}
	// The PostgreSQL server runs as its own user and must reach its
	// directory below this one.
	if err := os.Chmod(work, 0o755); err != nil {
		return 1, err
	}
	defer func() {
		if o.keep || code != 0 {
			fmt.Fprintf(stdout, "work directory kept (every process's log): %s\n", work)
			return
		}
		os.RemoveAll(work)
	}()

	s, err := startStack(ctx, o, work, logf)
	if err != nil {
		return 1, err
	}
	defer s.stop(logf)
	tenants, err := s.tenants(ctx)
	if err != nil {
		return 1, err
	}

	superCtx, stopSupervisor := context.WithCancel(ctx)
	defer stopSupervisor()
	s.supervise(superCtx, logf)

	stopLoad := make(chan struct{})
	l := newLoader(tenants, s.apis, o.rate)
	loaded := make(chan struct{})
	go func() {
		l.run(ctx, stopLoad)
		close(loaded)
	}()
	logf("load: 2 tenants × %.0f creates/s over %d API replicas; first fault in %s", o.rate, len(s.apis), o.warmUp)
	faultErr := func() error {
		if err := s.runFaults(ctx, o, logf); err != nil {
			return err
		}
		return sleep(ctx, o.tail)
	}()
	close(stopLoad)
	logf("load stopping: waiting for the writes under way, each to its answer or its %s bound", writeBound)
	<-loaded
	if faultErr != nil {
		return 1, faultErr
	}
	writes := l.results()
	logf("load stopped after %d writes; waiting up to %s for the stack to be quiet ...", len(writes), o.settle)
	q, err := s.waitQuiet(ctx, tenants, o.settle, logf)
	if err != nil {
		return 1, err
	}
	settled := q.reached(0)
	logf("%s", q)
	stopSupervisor()

	obs, err := s.observe(ctx, tenants, writes)
	if err != nil {
		return 1, err
	}
	v := judge(obs)
	report(stdout, o, v, q, settled, obs.Rows, l.skipped.Load(), l.maxInFlight)
	if len(v.Failures) > 0 {
		return 1, nil
	}
	return 0, nil
}
