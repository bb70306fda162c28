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
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/recordhub/recordhub/models"
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

// options are the command line's.
type options struct {
	duration  time.Duration
	workers   int
	records   int
	databases []string
	pgURL     string
	profile   map[string]bool // scenarios to profile
	keep      bool
	strict    bool
	webhooks  bool
	// role is the shape of the measured process: "all", or "api" against
	// a second process holding the worker and the embedded Temporal server.
	role string

	// The production group's (-production).
	production  bool
	prodWorkers []int // worker process counts, one configuration each
	burst       int   // tenant A's records
	baselineN   int   // bare workflows; 0: burst
	redisURL    string
}

const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("recordhub-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "z", 10*time.Second, "how long hey loads each scenario (hey -z)")
	fs.IntVar(&o.workers, "c", 50, "concurrent hey workers (hey -c)")
	fs.IntVar(&o.records, "records", 100_000, "records in the listed module")
	dbs := fs.String("db", "sqlite,postgres", "databases to run, comma-separated")
	fs.StringVar(&o.pgURL, "pg", defaultPostgresURL, "PostgreSQL server in which a fresh database is created and dropped")
	profile := fs.String("profile", "", "take CPU and allocation profiles of the service during these scenarios (comma-separated: get, post, list); the service is then built with a pprof listener, which the figures of that run include, and the work directory is kept")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (binaries, service logs, hey output)")
	fs.BoolVar(&o.webhooks, "webhooks", true, "run the webhook group (SQLite, embedded Temporal): idle RSS, change-to-delivery latency, deliveries/s against bare Temporal workflows; -db '' runs it alone")
	fs.BoolVar(&o.strict, "strict", false, "exit with status 3 when a target is missed")
	fs.BoolVar(&o.production, "production", false, "run only the production group: recordhub built -tags noembedtemporal, serve --role api and -workers worker processes on PostgreSQL (-pg) and Redis (-redis) against a separate Temporal server on PostgreSQL; a two-tenant burst; deliveries/s against bare workflows, exactly-once, worker shares, refused starts, tenant fairness")
	prodWorkers := fs.String("workers", "1,2", "with -production: worker process counts to measure, comma-separated, one configuration each")
	fs.IntVar(&o.burst, "burst", 2000, "with -production: records tenant A creates, 16 at a time")
	fs.IntVar(&o.baselineN, "baseline-n", 0, "with -production: bare Temporal workflows in the baseline (0: -burst)")
	fs.StringVar(&o.redisURL, "redis", "redis://127.0.0.1:6379/15", "with -production: the Redis the service processes share")
	fs.StringVar(&o.role, "role", "all", "shape of the measured process: all (API, worker, dispatcher and the embedded Temporal server in one process), or api (serve --role api, built -tags noembedtemporal as production images are, against a second process, role all, that holds the worker and the embedded Temporal server; every figure, RSS included, is the API process's)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: recordhub-bench [flags]\n\nLoad-tests recordhub against a bare Gin handler with hey; see the package doc.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for d := range strings.SplitSeq(*dbs, ",") {
		switch d = strings.TrimSpace(d); d {
		case "sqlite", "postgres":
			o.databases = append(o.databases, d)
		case "":
		default:
			return o, fmt.Errorf("-db: unknown database %q (sqlite, postgres)", d)
		}
	}
	o.profile = map[string]bool{}
	for p := range strings.SplitSeq(*profile, ",") {
		switch p = strings.TrimSpace(p); p {
		case "get", "post", "list":
			o.profile[p] = true
		case "":
		default:
			return o, fmt.Errorf("-profile: unknown scenario %q (get, post, list)", p)
		}
	}
	for w := range strings.SplitSeq(*prodWorkers, ",") {
		if w = strings.TrimSpace(w); w == "" {
			continue
		}
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 {
			return o, fmt.Errorf("-workers: %q is not a worker count", w)
		}
		o.prodWorkers = append(o.prodWorkers, n)
	}
	if o.production && (len(o.prodWorkers) == 0 || o.burst < 2 || o.baselineN < 0) {
		return o, errors.New("-production needs -workers (such as 1,2), -burst of at least 2 and -baseline-n of at least 0")
	}
	if o.role != "all" && o.role != "api" {
		return o, fmt.Errorf("-role: unknown shape %q (all, api)", o.role)
	}
	if o.duration < time.Second || o.workers < 1 || o.records < 1 {
		return o, errors.New("-z must be at least 1s, -c and -records at least 1")
	}
	if len(o.profile) > 0 {
		o.keep = true
	}
	return o, nil
}

// The contract's targets, as ratios to the bare handler.
const (
	targetGet     = 0.30
	targetPost    = 0.15
	targetList    = 0.025
	targetListP99 = 50 * time.Millisecond
	targetRSS     = 150_000_000 // bytes: MB, not MiB, the stricter reading
)

// scenario is one load against the service.
type scenario struct {
	name     string
	label    string
	minRatio float64
	maxP99   time.Duration // zero: no latency target
	load     func(s *service, f fixture) load
}

var scenarios = []scenario{
	{
		name: "get", label: "GET record", minRatio: targetGet,
		load: func(s *service, f fixture) load {
			return load{URL: s.url("/api/modules/" + f.listModule + "/records/" + f.recordID)}
		},
	},
	{
		name: "post", label: "POST record", minRatio: targetPost,
		load: func(s *service, f fixture) load {
			return load{Method: "POST", Body: recordBody, URL: s.url("/api/modules/" + f.writeModule + "/records")}
		},
	},
	{
		name: "list", label: "list page 1", minRatio: targetList, maxP99: targetListP99,
		load: func(s *service, f fixture) load {
			return load{URL: s.url("/api/modules/" + f.listModule + "/records?page=1&limit=20")}
		},
	},
}

// measurement is one scenario's outcome on one database.
type measurement struct {
	scenario scenario
	db       string
	res      heyResult
	peakRSS  int64
	dropped  float64       // access-log rows the service dropped during the run
	cpu      time.Duration // CPU time of the service's process during the run
	dbCPU    time.Duration // CPU time of the local PostgreSQL server's processes
	note     string
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
		bin, err := buildService(ctx, root, work, "recordhub", false, "noembedtemporal")
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
	bin, err := buildService(ctx, root, work, "recordhub", len(o.profile) > 0)
	if err != nil {
		return 1, err
	}
	b := &bench{o: o, out: stdout, work: work, bin: bin, apiBin: bin}
	if o.role == "api" && len(o.databases) > 0 {
		// An API process runs as production images build it: without the
		// embedded Temporal server, whose packages cost memory just by
		// being linked in.
		fmt.Fprintf(stdout, "building ./cmd/recordhub -tags noembedtemporal ...\n")
		if b.apiBin, err = buildService(ctx, root, work, "recordhub-api", len(o.profile) > 0, "noembedtemporal"); err != nil {
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

func (b *bench) bare(ctx context.Context, ping *process, l load, when string) (measurement, error) {
	m := measurement{db: "-"}
	fmt.Fprintf(b.out, "bare gin /ping (%s) ...\n", when)
	l.Workers = b.o.workers
	warm := l
	warm.Requests = 20 * b.o.workers
	if _, _, err := runHey(ctx, warm); err != nil {
		return m, err
	}
	l.Duration = b.o.duration
	cpu0, _ := processCPU(ping.cmd.Process.Pid)
	res, raw, err := runHey(ctx, l)
	if err != nil {
		return m, err
	}
	cpu1, _ := processCPU(ping.cmd.Process.Pid)
	m.res, m.cpu = res, cpu1-cpu0
	b.saveRaw("bare-"+when, raw)
	if res.Errors() > 0 {
		return m, fmt.Errorf("the bare handler answered errors (%s): the machine or hey is broken", res.ErrorSummary())
	}
	return m, nil
}

func (b *bench) saveRaw(name, raw string) {
	_ = os.WriteFile(filepath.Join(b.work, "hey-"+name+".txt"), []byte(raw), 0o600)
}

// database runs every scenario against a fresh service on one database and
// returns the measurements and the peak RSS over all of them.
func (b *bench) database(ctx context.Context, bin, db string) ([]measurement, int64, error) {
	dataDir := filepath.Join(b.work, db+"-data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, 0, err
	}
	adminKey := models.NewAPIKeySecret()
	env := map[string]string{
		"RECORDHUB_DATA_DIR":            dataDir,
		"RECORDHUB_BOOTSTRAP_ADMIN_KEY": adminKey,
		"DATABASE_URL":                  "",
	}
	var seedDB *dbHandle
	if db == "postgres" {
		h, err := freshPostgres(ctx, b.o.pgURL)
		if err != nil {
			return nil, 0, &skipError{err}
		}
		defer func() {
			if err := h.drop(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(b.out, "postgres: %v\n", err)
			}
		}()
		env["DATABASE_URL"] = h.url
		seedDB = h
	}
	var args []string
	if b.o.role == "api" {
		// The process under test runs the API alone; a second one holds
		// the worker, the dispatcher and the Temporal server it talks to.
		backendEnv := maps.Clone(env)
		fmt.Fprintf(b.out, "%s: starting recordhub serve (worker and Temporal) ...\n", db)
		backend, err := startService(ctx, bin, filepath.Join(b.work, db+"-backend.log"), backendEnv, false)
		if err != nil {
			return nil, 0, err
		}
		defer func() {
			if err := backend.stop(40 * time.Second); err != nil {
				fmt.Fprintf(b.out, "%s: stopping the backend: %v\n", db, err)
			}
		}()
		env["TEMPORAL_ADDRESS"] = "127.0.0.1:" + backendEnv["RECORDHUB_TEMPORAL_PORT"]
		args = []string{"--role", "api"}
	}
	fmt.Fprintf(b.out, "%s: starting recordhub serve %s...\n", db, strings.Join(append(args, ""), " "))
	svcBin := bin
	if b.o.role == "api" {
		svcBin = b.apiBin
	}
	svc, err := startService(ctx, svcBin, filepath.Join(b.work, db+"-service.log"), env, len(b.o.profile) > 0, args...)
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		if err := svc.stop(40 * time.Second); err != nil {
			fmt.Fprintf(b.out, "%s: stopping recordhub: %v\n", db, err)
		}
	}()
	if db == "sqlite" {
		h, err := openSQLite(ctx, filepath.Join(dataDir, "recordhub.db"))
		if err != nil {
			return nil, 0, err
		}
		seedDB = h
	}
	defer seedDB.db.Close()

	f, err := setUp(ctx, svc, adminKey)
	if err != nil {
		return nil, 0, err
	}
	fmt.Fprintf(b.out, "%s: seeding %d records ...\n", db, b.o.records)
	start := time.Now()
	if f.recordID, err = seedRecords(ctx, seedDB.db, db == "postgres", f.listModule, b.o.records); err != nil {
		return nil, 0, err
	}
	fmt.Fprintf(b.out, "%s: seeded in %s\n", db, time.Since(start).Round(100*time.Millisecond))
	if err := checkSeed(ctx, svc, f, b.o.records); err != nil {
		return nil, 0, err
	}

	var out []measurement
	svc.rss.window()
	for _, sc := range scenarios {
		m, err := b.scenario(ctx, svc, f, db, sc)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", sc.name, err)
		}
		out = append(out, m)
	}
	// The list scenario must still see exactly the seeded records.
	if err := checkSeed(ctx, svc, f, b.o.records); err != nil {
		return nil, 0, fmt.Errorf("after the runs: %w", err)
	}
	return out, svc.rss.max.Load(), nil
}

func (b *bench) scenario(ctx context.Context, svc *service, f fixture, db string, sc scenario) (measurement, error) {
	m := measurement{scenario: sc, db: db}
	fmt.Fprintf(b.out, "%s: %s ...\n", db, sc.label)
	if err := svc.drainAccessLogs(ctx, time.Minute); err != nil {
		return m, err
	}
	l := sc.load(svc, f)
	l.Workers = b.o.workers
	l.Headers = []string{"Authorization: Bearer " + f.key}
	warm := l
	warm.Requests = 20 * b.o.workers
	if _, _, err := runHey(ctx, warm); err != nil {
		return m, err
	}
	if err := svc.drainAccessLogs(ctx, time.Minute); err != nil {
		return m, err
	}
	droppedBefore, err := svc.metric(ctx, "recordhub_access_log_dropped_total")
	if err != nil {
		return m, err
	}
	svc.rss.window()

	profiled := make(chan error, 2)
	profiling := 0
	if b.o.profile[sc.name] {
		secs := max(1, int((b.o.duration-time.Second)/time.Second))
		for _, p := range []string{"profile", "allocs"} {
			profiling++
			path := filepath.Join(b.work, fmt.Sprintf("%s-%s-%s.pprof", p, db, sc.name))
			go func() { profiled <- svc.saveProfile(ctx, p, secs, path) }()
		}
	}
	l.Duration = b.o.duration
	cpu0, _ := processCPU(svc.cmd.Process.Pid)
	var db0 time.Duration
	if db == "postgres" {
		db0 = commandCPU("postgres")
	}
	res, raw, err := runHey(ctx, l)
	if err != nil {
		return m, err
	}
	cpu1, _ := processCPU(svc.cmd.Process.Pid)
	if db == "postgres" {
		m.dbCPU = commandCPU("postgres") - db0
	}
	b.saveRaw(db+"-"+sc.name, raw)
	m.res, m.cpu = res, cpu1-cpu0
	m.peakRSS = svc.rss.window()
	for range profiling {
		if err := <-profiled; err != nil {
			return m, err
		}
	}
	if profiling > 0 {
		m.note = "profiled"
		fmt.Fprintf(b.out, "%s: profiles in %s; read them with: go tool pprof -top %s %s\n", db, b.work, filepath.Join(b.work, "recordhub"),
			filepath.Join(b.work, fmt.Sprintf("profile-%s-%s.pprof", db, sc.name)))
	}
	// Rows still queued are written or dropped within the writer's
	// interval; wait for them before counting the drops.
	if err := svc.drainAccessLogs(ctx, time.Minute); err != nil {
		return m, err
	}
	time.Sleep(500 * time.Millisecond)
	droppedAfter, err := svc.metric(ctx, "recordhub_access_log_dropped_total")
	if err != nil {
		return m, err
	}
	m.dropped = droppedAfter - droppedBefore
	return m, nil
}

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
