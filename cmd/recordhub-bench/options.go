package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
	webhookN  int // records (and workflows of each floor) in the webhook throughput run
	// role is the shape of the measured process: "all", or "api" against
	// a second process holding the worker and the embedded Temporal server.
	role string

	// The production group's (-production).
	production  bool
	prodWorkers []int // worker process counts, one configuration each
	burst       int   // tenant A's records
	baselineN   int   // bare workflows; 0: burst
	redisURL    string
	// temporalConfig: extra dynamic config of the production group's
	// Temporal server.
	temporalConfig map[string]any
	// trimVisibility drops the Temporal server's visibility indexes that
	// operators do not search by, as the operators' document advises.
	trimVisibility bool

	// The noisy-neighbour mode's (-noisy).
	noisy bool
	// noisyProduction runs each scenario on a fresh production shape
	// instead of the embedded defaults.
	noisyProduction bool
	noisyBin        string // the service measured; "": built from the working tree
	noisyBefore     string // a git revision to compare, built into the work directory
	noisyBeforeBin  string // or a binary to compare
	noisyScenarios  []string
	noisyBN         int           // tenant B's creates per scenario
	noisyBEvery     time.Duration // between them

	// The idempotency mode's (-idempotency).
	idempotency bool
	idemN       int // creates per round and kind
	idemRounds  int
	// The change feed mode's (-changes).
	changes            bool
	throttle           bool
	throttleRedis      string
	changesSubscribers int           // live readers of the module
	changesRate        int           // creates a second
	changesFor         time.Duration // how long
	changesIdle        int           // idle streams whose memory is measured
	// The brokers mode's (-brokers).
	brokers                  bool
	brokersAMQP, brokersNATS string
	brokersProduction        bool
}

// noisyScenarioNames are -noisy-scenarios' choices, in the order they run.
var noisyScenarioNames = []string{"baseline", "fanout", "filters", "hanging", "resync"}

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
	profile := fs.String("profile", "", "take CPU and allocation profiles of the service during these scenarios (comma-separated: get, post, list; webhooks, the first 5 s of the webhook group's throughput run; with -idempotency: plain, keyed; with -production: temporal, the Temporal server over the first 10 s of each burst); the service then runs with its profiler on (RECORDHUB_PPROF_ADDR), which the figures of that run include, and the work directory is kept")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (binaries, service logs, hey output)")
	fs.BoolVar(&o.webhooks, "webhooks", true, "run the webhook group (SQLite, embedded Temporal): idle RSS, change-to-delivery latency, deliveries/s against bare Temporal workflows; -db '' runs it alone")
	fs.IntVar(&o.webhookN, "webhook-n", 600, "records in the webhook group's throughput run, and workflows in each floor run on the same server")
	fs.BoolVar(&o.strict, "strict", false, "exit with status 3 when a target is missed")
	fs.BoolVar(&o.production, "production", false, "run only the production group: recordhub built -tags noembedtemporal, serve --role api and -workers worker processes on PostgreSQL (-pg) and Redis (-redis) against a separate Temporal server on PostgreSQL; a two-tenant burst; deliveries/s against bare workflows, exactly-once, worker shares, refused starts, tenant fairness")
	prodWorkers := fs.String("workers", "1,2", "with -production: worker process counts to measure, comma-separated, one configuration each")
	fs.IntVar(&o.burst, "burst", 2000, "with -production: records tenant A creates, 16 at a time")
	fs.IntVar(&o.baselineN, "baseline-n", 0, "with -production: workflows in each floor run (bare one-activity and local-activity workflows on the same server; 0: -burst)")
	temporalConfig := fs.String("temporal-config", "", "with -production: extra dynamic config of the Temporal server, comma-separated key=value, each value JSON (a number, true, false) or else a string, e.g. matching.numTaskqueueReadPartitions=1,matching.numTaskqueueWritePartitions=1")
	fs.BoolVar(&o.trimVisibility, "temporal-trim-visibility", true, "with -production: drop the Temporal server's visibility indexes that operators do not search by, as the operators' document advises (false: Temporal's schema as it comes)")
	fs.StringVar(&o.redisURL, "redis", "redis://127.0.0.1:6379/15", "with -production and -noisy-production: the Redis the service processes share")
	fs.StringVar(&o.role, "role", "all", "shape of the measured process: all (API, worker, dispatcher and the embedded Temporal server in one process), or api (serve --role api, built -tags noembedtemporal as production images are, against a second process, role all, that holds the worker and the embedded Temporal server; every figure, RSS included, is the API process's)")
	fs.BoolVar(&o.noisy, "noisy", false, "run only the noisy-neighbour mode (make bench-noisy): tenant B's create → first webhook request while tenant A loads the same service, one fresh `recordhub serve` (SQLite, embedded Temporal) per scenario and binary; see cmd/recordhub-bench/README.md")
	fs.BoolVar(&o.noisyProduction, "noisy-production", false, "with -noisy: run each scenario on a fresh production shape instead: a separate Temporal server on PostgreSQL (fresh databases on -pg's server), serve --role api and one serve --role worker on a fresh database there and Redis (-redis), every binary built -tags noembedtemporal")
	fs.StringVar(&o.noisyBin, "noisy-bin", "", "with -noisy: the recordhub binary to measure (default: ./cmd/recordhub built from the working tree)")
	fs.StringVar(&o.noisyBefore, "noisy-before", "", "with -noisy: a git revision (main, HEAD~3, a hash) built from `git archive` to compare with, each scenario run against both in turn")
	fs.StringVar(&o.noisyBeforeBin, "noisy-before-bin", "", "with -noisy: a recordhub binary to compare with, instead of -noisy-before")
	scenarios := fs.String("noisy-scenarios", strings.Join(noisyScenarioNames, ","), "with -noisy: the scenarios to run, comma-separated")
	fs.IntVar(&o.noisyBN, "noisy-b-n", 80, "with -noisy: tenant B's creates per scenario")
	fs.DurationVar(&o.noisyBEvery, "noisy-b-every", 250*time.Millisecond, "with -noisy: time between tenant B's creates")
	fs.BoolVar(&o.idempotency, "idempotency", false, "run only the idempotency mode: the service's CPU per record create, plain and with an Idempotency-Key, in alternating rounds on each -db")
	fs.IntVar(&o.idemN, "idempotency-n", 2000, "with -idempotency: creates per round of each kind")
	fs.IntVar(&o.idemRounds, "idempotency-rounds", 4, "with -idempotency: rounds of each kind")
	fs.BoolVar(&o.throttle, "throttle", false, "run only the throttle mode: deliveries/s and CPU per delivery without a throttle and with one that never binds, then the drain rate of a 2,000-event backlog at rate_limit 20/s")
	fs.StringVar(&o.throttleRedis, "throttle-redis", "redis://127.0.0.1:6379/0", "with -throttle: REDIS_URL of the service, which holds the throttle; empty holds it in the process")
	fs.BoolVar(&o.brokers, "brokers", false, "run only the brokers mode: deliveries/s and machine CPU per delivery to an HTTP receiver, to RabbitMQ and to NATS JetStream, one endpoint at a time in turns, on serve with its embedded Temporal server")
	fs.StringVar(&o.brokersAMQP, "brokers-amqp", "amqp://guest:guest@127.0.0.1:5672/", "with -brokers: the RabbitMQ to publish to")
	fs.StringVar(&o.brokersNATS, "brokers-nats", "nats://127.0.0.1:4222", "with -brokers: the NATS server, with JetStream, to publish to")
	fs.BoolVar(&o.brokersProduction, "brokers-production", false, "with -brokers: measure the production shape instead (serve --role api and one --role worker built -tags noembedtemporal, on PostgreSQL (-pg) and Redis (-redis), against a separate Temporal server on PostgreSQL)")
	fs.BoolVar(&o.changes, "changes", false, "run only the change feed mode: commit → SSE event latency with -changes-subscribers live readers of one module at -changes-rate creates a second, and the service's RSS per idle stream, on each database of -db")
	fs.IntVar(&o.changesSubscribers, "changes-subscribers", 100, "with -changes: live readers of the module, one tenant, one key")
	fs.IntVar(&o.changesRate, "changes-rate", 200, "with -changes: creates a second")
	fs.DurationVar(&o.changesFor, "changes-for", 10*time.Second, "with -changes: how long the creates go on")
	fs.IntVar(&o.changesIdle, "changes-idle", 200, "with -changes: idle streams whose memory is measured (at most the service's streams per key, 200 by default)")
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
		case "get", "post", "list", "plain", "keyed", "webhooks", "temporal":
			o.profile[p] = true
		case "":
		default:
			return o, fmt.Errorf("-profile: unknown scenario %q (get, post, list; webhooks; plain, keyed with -idempotency; temporal with -production)", p)
		}
	}
	if *temporalConfig != "" {
		o.temporalConfig = map[string]any{}
		for kv := range strings.SplitSeq(*temporalConfig, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k == "" {
				return o, fmt.Errorf("-temporal-config: %q is not key=value", kv)
			}
			var val any = v
			if json.Unmarshal([]byte(v), &val) != nil {
				val = v
			}
			o.temporalConfig[k] = val
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
	for sc := range strings.SplitSeq(*scenarios, ",") {
		switch sc = strings.TrimSpace(sc); {
		case sc == "":
		case slices.Contains(noisyScenarioNames, sc):
			o.noisyScenarios = append(o.noisyScenarios, sc)
		default:
			return o, fmt.Errorf("-noisy-scenarios: unknown scenario %q (%s)", sc, strings.Join(noisyScenarioNames, ", "))
		}
	}
	if o.noisy && (o.production || len(o.noisyScenarios) == 0 || o.noisyBN < 2 || o.noisyBEvery <= 0 ||
		(o.noisyBefore != "" && o.noisyBeforeBin != "")) {
		return o, errors.New("-noisy runs alone (not with -production), needs -noisy-scenarios, -noisy-b-n of at least 2, a positive -noisy-b-every, and at most one of -noisy-before and -noisy-before-bin")
	}
	if o.idempotency && (o.noisy || o.production || len(o.databases) == 0 || o.idemN < 1 || o.idemRounds < 1) {
		return o, errors.New("-idempotency runs alone (not with -noisy or -production), on at least one -db, with -idempotency-n and -idempotency-rounds of at least 1")
	}
	if o.changes && (o.idempotency || o.production || o.noisy || len(o.databases) == 0 || o.changesSubscribers < 1 || o.changesRate < 1 || o.changesFor < time.Second || o.changesIdle < 1) {
		return o, errors.New("-changes runs alone, needs -db, and positive -changes-subscribers, -changes-rate, -changes-idle and a -changes-for of at least 1s")
	}
	if o.noisyProduction && !o.noisy {
		return o, errors.New("-noisy-production goes with -noisy")
	}
	if o.production && (len(o.prodWorkers) == 0 || o.burst < 2 || o.baselineN < 0) {
		return o, errors.New("-production needs -workers (such as 1,2), -burst of at least 2 and -baseline-n of at least 0")
	}
	if !o.production && !o.noisy && len(o.databases) == 0 && !o.webhooks {
		return o, errors.New("nothing to run: -db is empty and -webhooks=false")
	}
	if o.role != "all" && o.role != "api" {
		return o, fmt.Errorf("-role: unknown shape %q (all, api)", o.role)
	}
	if o.duration < time.Second || o.workers < 1 || o.records < 1 || o.webhookN < 2 {
		return o, errors.New("-z must be at least 1s, -c and -records at least 1, -webhook-n at least 2")
	}
	if len(o.profile) > 0 {
		o.keep = true
	}
	return o, nil
}
