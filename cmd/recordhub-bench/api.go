package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
	"github.com/recordhub/recordhub/models"
)

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

// dbStack is the service of one database's scenarios, with what it was
// started with.
type dbStack struct {
	svc      *service
	env      map[string]string
	adminKey string
	closers  []func()
}

// close stops what startDatabase started, the last started first.
func (st *dbStack) close() {
	for i := len(st.closers) - 1; i >= 0; i-- {
		st.closers[i]()
	}
}

// database runs every scenario against a fresh service on one database and
// returns the measurements and the peak RSS over all of them.
func (b *bench) database(ctx context.Context, bin, db string) ([]measurement, int64, error) {
	st, err := b.startDatabase(ctx, bin, db)
	if err != nil {
		return nil, 0, err
	}
	defer st.close()
	f, err := b.seed(ctx, db, st)
	if err != nil {
		return nil, 0, err
	}
	var out []measurement
	st.svc.rss.window()
	for _, sc := range scenarios {
		m, err := b.scenario(ctx, st.svc, f, db, sc)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", sc.name, err)
		}
		out = append(out, m)
	}
	// The list scenario must still see exactly the seeded records.
	if err := checkSeed(ctx, st.svc, f, b.o.records); err != nil {
		return nil, 0, fmt.Errorf("after the runs: %w", err)
	}
	return out, st.svc.rss.max.Load(), nil
}

// startDatabase starts the service under test on a fresh SQLite file or
// PostgreSQL database (and, with -role api, the process holding its worker
// and Temporal server).
func (b *bench) startDatabase(ctx context.Context, bin, db string) (st *dbStack, err error) {
	st = &dbStack{adminKey: models.NewAPIKeySecret()}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	dataDir := filepath.Join(b.work, db+"-data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return st, err
	}
	st.env = map[string]string{
		"RECORDHUB_DATA_DIR":            dataDir,
		"RECORDHUB_BOOTSTRAP_ADMIN_KEY": st.adminKey,
		// The bench opens the service's database with the same key.
		"RECORDHUB_SECRET_KEY": harness.NewSecretKey(),
		"DATABASE_URL":         "",
	}
	maps.Copy(st.env, b.serviceEnv)
	if db == "postgres" {
		h, err := freshPostgres(ctx, b.o.pgURL)
		if err != nil {
			return st, &skipError{err}
		}
		st.closers = append(st.closers, func() {
			if err := h.drop(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(b.out, "postgres: %v\n", err)
			}
		})
		st.env["DATABASE_URL"] = h.url
	}
	var args []string
	svcBin := bin
	if b.o.role == "api" {
		// The process under test runs the API alone; a second one holds
		// the worker, the dispatcher and the Temporal server it talks to.
		backendEnv := maps.Clone(st.env)
		fmt.Fprintf(b.out, "%s: starting recordhub serve (worker and Temporal) ...\n", db)
		backend, err := startService(ctx, bin, filepath.Join(b.work, db+"-backend.log"), backendEnv, false)
		if err != nil {
			return st, err
		}
		st.closers = append(st.closers, func() { stopService(b.out, db+": the backend", backend) })
		st.env["TEMPORAL_ADDRESS"] = "127.0.0.1:" + backendEnv["RECORDHUB_TEMPORAL_PORT"]
		args, svcBin = []string{"--role", "api"}, b.apiBin
	}
	fmt.Fprintf(b.out, "%s: starting recordhub serve %s...\n", db, strings.Join(append(args, ""), " "))
	if st.svc, err = startService(ctx, svcBin, filepath.Join(b.work, db+"-service.log"), st.env, len(b.o.profile) > 0, args...); err != nil {
		return st, err
	}
	svc := st.svc
	st.closers = append(st.closers, func() { stopService(b.out, db+": recordhub", svc) })
	return st, nil
}

// seed creates the bench's key and modules through the API and the listed
// module's records through the store, and checks what the API then shows.
func (b *bench) seed(ctx context.Context, db string, st *dbStack) (fixture, error) {
	f, err := setUp(ctx, st.svc, st.adminKey)
	if err != nil {
		return f, err
	}
	store, err := openServiceStore(ctx, st.env)
	if err != nil {
		return f, err
	}
	defer store.Close()
	fmt.Fprintf(b.out, "%s: seeding %d records through the store ...\n", db, b.o.records)
	start := time.Now()
	if f.recordID, err = seedRecords(ctx, store, f.key, f.listModule, b.o.records); err != nil {
		return f, err
	}
	created := time.Since(start)
	// The scenarios must not pay for the service's dispatcher taking
	// events from the outbox.
	if err := waitOutboxDrained(ctx, store, 10*time.Minute); err != nil {
		return f, err
	}
	fmt.Fprintf(b.out, "%s: seeded in %s, the outbox empty %s later\n", db, created.Round(100*time.Millisecond),
		(time.Since(start) - created).Round(100*time.Millisecond))
	if db == "postgres" {
		// Fresh statistics, as autovacuum would gather them in production.
		if err := analyze(ctx, st.env["DATABASE_URL"]); err != nil {
			return f, err
		}
	}
	return f, checkSeed(ctx, st.svc, f, b.o.records)
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
	droppedBefore, err := svc.metric(ctx, metricLogDropped)
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
	droppedAfter, err := svc.metric(ctx, metricLogDropped)
	if err != nil {
		return m, err
	}
	m.dropped = droppedAfter - droppedBefore
	return m, nil
}
