// Command recordhub-bench load-tests recordhub with hey and reports every
// figure as a ratio to a bare Gin handler measured in the same run: these
// machines are too noisy for absolute requests per second to mean anything
// from one run to the next, while a ratio to the floor that Gin, net/http
// and hey set on the same machine at the same moment does.
//
// It builds ./cmd/recordhub, starts the bare handler and, for SQLite and
// then PostgreSQL, `recordhub serve` as child processes on loopback ports,
// seeds a module of 100,000 records and runs each scenario with
// `hey -z 10s -c 50`. Run it with `make bench` from the repository root;
// `go run ./cmd/recordhub-bench -h` lists the flags.
//
// With -production (`make bench-production`) it runs only the production
// group instead (production.go): recordhub built -tags noembedtemporal, one
// API and N worker processes sharing PostgreSQL and Redis against a separate
// Temporal server on PostgreSQL, a two-tenant burst, and the scale figures
// (deliveries/s against bare workflows on the same server, exactly-once,
// each worker's share, refused starts, tenant fairness).
package main

import (
	"context"
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
	if _, err := exec.LookPath("hey"); err != nil && len(o.databases) > 0 && !o.production {
		return 1, errors.New(heyInstallHint)
	}
	root, err := moduleRoot(ctx)
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

	if o.production {
		fmt.Fprintf(stdout, "building ./cmd/recordhub -tags noembedtemporal ...\n")
		bin, err := buildService(ctx, root, work, "recordhub", "noembedtemporal")
		if err != nil {
			return 1, err
		}
		b := &bench{o: o, out: stdout, work: work, bin: bin, apiBin: bin}
		r, err := b.production(ctx)
		if err != nil {
			return 1, fmt.Errorf("production: %w", err)
		}
		if reportProduction(stdout, o, r) > 0 {
			o.keep = true // the services' logs, for the misses
			if o.strict {
				return 3, nil
			}
		}
		return 0, nil
	}
	fmt.Fprintf(stdout, "building ./cmd/recordhub ...\n")
	bin, err := buildService(ctx, root, work, "recordhub")
	if err != nil {
		return 1, err
	}
	b := &bench{o: o, out: stdout, work: work, bin: bin, apiBin: bin}
	if o.role == "api" && len(o.databases) > 0 {
		// An API process runs as production images build it: without the
		// embedded Temporal server, whose packages cost memory just by
		// being linked in.
		fmt.Fprintf(stdout, "building ./cmd/recordhub -tags noembedtemporal ...\n")
		if b.apiBin, err = buildService(ctx, root, work, "recordhub-api", "noembedtemporal"); err != nil {
			return 1, err
		}
	}
	if len(o.databases) == 0 {
		if !o.webhooks {
			return 2, errors.New("nothing to run: -db is empty and -webhooks=false")
		}
		missed := b.runWebhooks(ctx, bin)
		if missed > 0 && o.strict {
			return 3, nil
		}
		return 0, nil
	}
	ping, pingAddr, err := startPing(ctx)
	if err != nil {
		return 1, err
	}
	defer ping.stop(5 * time.Second)
	bareLoad := load{URL: "http://" + pingAddr + "/ping"}

	first, err := b.bare(ctx, ping, bareLoad, "before")
	if err != nil {
		return 1, err
	}
	var (
		results []measurement
		peaks   = map[string]int64{}
		skipped []string
	)
	for _, db := range o.databases {
		rs, peak, err := b.database(ctx, bin, db)
		var skip *skipError
		switch {
		case errors.As(err, &skip):
			fmt.Fprintf(stdout, "%s: skipped: %v\n", db, skip.err)
			skipped = append(skipped, db)
			continue
		case err != nil:
			return 1, fmt.Errorf("%s: %w", db, err)
		}
		results = append(results, rs...)
		peaks[db] = peak
	}
	last, err := b.bare(ctx, ping, bareLoad, "after")
	if err != nil {
		return 1, err
	}
	missed := report(stdout, o, first, last, results, peaks, skipped)
	if o.webhooks {
		missed += b.runWebhooks(ctx, bin)
	}
	if missed > 0 && o.strict {
		return 3, nil
	}
	return 0, nil
}

type bench struct {
	o    options
	out  io.Writer
	work string
	// bin is the service as `make run` builds it; apiBin the API process
	// of -role api.
	bin, apiBin string
}

// skipError marks a database that cannot be reached: its scenarios are
// skipped, not failed.
type skipError struct{ err error }

func (e *skipError) Error() string { return e.err.Error() }

func (b *bench) saveRaw(name, raw string) {
	_ = os.WriteFile(filepath.Join(b.work, "hey-"+name+".txt"), []byte(raw), 0o600)
}
