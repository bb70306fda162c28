// Command recordhub-bench load-tests recordhub with hey and reports every
// figure as a ratio to a bare Gin handler measured in the same run: these
// machines are too noisy for absolute requests per second to mean anything
// from one run to the next, while a ratio to the floor that Gin, net/http
// and hey set on the same machine at the same moment does.
//
// It builds ./cmd/recordhub, starts the bare handler and, for SQLite and
// then PostgreSQL, `recordhub serve` as child processes on loopback ports,
// seeds a module of 100,000 records through the store and runs each
// scenario with `hey -z 10s -c 50` (api.go). Then the webhook group
// (webhooks.go): latency, and deliveries/s against two floors on the same
// embedded Temporal server (floors.go: a bare workflow POSTing from an
// activity, and from a local activity), with the machine's CPU per
// delivery. Run it with `make bench` from the repository root;
// `go run ./cmd/recordhub-bench -h` lists the flags.
//
// With -production (`make bench-production`) it runs only the production
// group instead (production.go): recordhub built -tags noembedtemporal, one
// API and N worker processes sharing PostgreSQL and Redis against a separate
// Temporal server on PostgreSQL, a two-tenant burst, and the scale figures
// (deliveries/s and CPU per delivery against both floors on the same
// server, exactly-once, each worker's share, refused starts, tenant
// fairness).
//
// With -noisy (`make bench-noisy`) it runs only the noisy-neighbour mode
// (noisy.go): tenant B's create → first webhook request while tenant A
// loads the same service in one of five ways, each scenario on a fresh
// `recordhub serve` with its embedded defaults (with -noisy-production, on
// the production group's shape: API and worker processes on PostgreSQL and
// Redis against a Temporal server of its own), against the service built
// from the working tree and, to compare, another revision or binary; see
// README.md beside this file.
//
// With -changes it runs only the change feed mode (changes.go): commit →
// server-sent event latency with many live readers of one module, and the
// memory of an idle stream, on each database of -db.
//
// With -throttle it runs only the throttle mode (throttle.go): the cost of
// an endpoint throttle that never binds, and the drain rate of a backlog
// against one that does.
//
// With -brokers it runs only the brokers mode (brokers.go): deliveries/s
// and machine CPU per delivery to an HTTP receiver, to RabbitMQ and to
// NATS JetStream from one embedded `serve`, in turns.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "ping" {
		os.Exit(runPing(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "temporal-baseline" {
		os.Exit(runBaseline(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordhub-bench:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// run is main without the process; it returns the exit status. The work
// directory is kept when it fails, for the service's log.
func run(ctx context.Context, args []string, stdout io.Writer) (_ int, err error) {
	o, err := parseOptions(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0, nil
	}
	if err != nil {
		return 2, err
	}
	if _, err := exec.LookPath("hey"); err != nil && len(o.databases) > 0 && !o.production && !o.noisy && !o.changes && !o.idempotency && !o.throttle && !o.brokers {
		return 1, errors.New(heyInstallHint)
	}
	root, err := harness.ModuleRoot(ctx, "run the bench inside the recordhub module")
	if err != nil {
		return 1, err
	}
	work, err := os.MkdirTemp("", "recordhub-bench-")
	if err != nil {
		return 1, err
	}
	defer func() {
		if o.keep || err != nil {
			fmt.Fprintf(stdout, "\nwork directory kept: %s\n", work)
			return
		}
		os.RemoveAll(work)
	}()

	b := &bench{o: o, out: stdout, work: work}
	var missed int
	switch {
	case o.brokers:
		err = b.runBrokers(ctx, root)
	case o.changes:
		err = b.runChanges(ctx, root)
	case o.throttle:
		err = b.runThrottle(ctx, root)
	case o.noisy:
		err = b.runNoisy(ctx, root)
	case o.idempotency:
		err = b.runIdempotency(ctx, root)
	case o.production:
		missed, err = b.runProduction(ctx, root)
		if missed > 0 {
			o.keep = true // the services' logs, for the misses
		}
	default:
		missed, err = b.runEmbedded(ctx, root)
	}
	if err != nil {
		return 1, err
	}
	if missed > 0 && o.strict {
		return 3, nil
	}
	return 0, nil
}

// runProduction builds the service as production images are and runs the
// production group; it returns how many targets were missed.
func (b *bench) runProduction(ctx context.Context, root string) (int, error) {
	fmt.Fprintf(b.out, "building ./cmd/recordhub -tags noembedtemporal ...\n")
	bin, err := buildService(ctx, root, b.work, "recordhub", "noembedtemporal")
	if err != nil {
		return 0, err
	}
	b.bin, b.apiBin = bin, bin
	r, err := b.production(ctx)
	if err != nil {
		return 0, fmt.Errorf("production: %w", err)
	}
	return reportProduction(b.out, b.o, r), nil
}

// runEmbedded builds the service as `make run` does and runs the API
// scenarios on each database, then the webhook group; it returns how many
// targets were missed.
func (b *bench) runEmbedded(ctx context.Context, root string) (int, error) {
	fmt.Fprintf(b.out, "building ./cmd/recordhub ...\n")
	bin, err := buildService(ctx, root, b.work, "recordhub")
	if err != nil {
		return 0, err
	}
	b.bin, b.apiBin = bin, bin
	if b.o.role == "api" && len(b.o.databases) > 0 {
		// An API process runs as production images build it: without the
		// embedded Temporal server, whose packages cost memory just by
		// being linked in.
		fmt.Fprintf(b.out, "building ./cmd/recordhub -tags noembedtemporal ...\n")
		if b.apiBin, err = buildService(ctx, root, b.work, "recordhub-api", "noembedtemporal"); err != nil {
			return 0, err
		}
	}
	missed := 0
	if len(b.o.databases) > 0 {
		if missed, err = b.runAPI(ctx); err != nil {
			return missed, err
		}
	}
	if b.o.webhooks {
		missed += b.runWebhooks(ctx, bin)
	}
	return missed, nil
}

// runAPI measures the bare handler, then every scenario on each database,
// then the bare handler again, and prints the table; it returns how many
// targets were missed.
func (b *bench) runAPI(ctx context.Context) (int, error) {
	ping, pingAddr, err := startPing(ctx)
	if err != nil {
		return 0, err
	}
	defer ping.stop(5 * time.Second)
	bareLoad := load{URL: "http://" + pingAddr + "/ping"}

	first, err := b.bare(ctx, ping, bareLoad, "before")
	if err != nil {
		return 0, err
	}
	var (
		results []measurement
		peaks   = map[string]int64{}
		skipped []string
	)
	for _, db := range b.o.databases {
		rs, peak, err := b.database(ctx, b.bin, db)
		var skip *skipError
		switch {
		case errors.As(err, &skip):
			fmt.Fprintf(b.out, "%s: skipped: %v\n", db, skip.err)
			skipped = append(skipped, db)
			continue
		case err != nil:
			return 0, fmt.Errorf("%s: %w", db, err)
		}
		results = append(results, rs...)
		peaks[db] = peak
	}
	last, err := b.bare(ctx, ping, bareLoad, "after")
	if err != nil {
		return 0, err
	}
	return report(b.out, b.o, first, last, results, peaks, skipped), nil
}

type bench struct {
	o    options
	out  io.Writer
	work string
	// bin is the service as `make run` builds it; apiBin the API process
	// of -role api.
	bin, apiBin string
	// pgAdmin is the production group's connection to the PostgreSQL
	// server's postgres database, for its cost counts.
	pgAdmin *sql.DB
	costDBs costDBs // the Temporal server's databases
	// temporalPprof is the production Temporal server's profiler
	// (-profile temporal), or empty.
	temporalPprof string
	// serviceEnv is added to the settings startDatabase starts the
	// service with.
	serviceEnv map[string]string
}

// skipError marks a database that cannot be reached: its scenarios are
// skipped, not failed.
type skipError struct{ err error }

func (e *skipError) Error() string { return e.err.Error() }

func (b *bench) saveRaw(name, raw string) {
	_ = os.WriteFile(filepath.Join(b.work, "hey-"+name+".txt"), []byte(raw), 0o600)
}
