package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// The idempotency mode (-idempotency): what an Idempotency-Key costs a
// record create. On each database a fresh `recordhub serve` takes rounds
// of -idempotency-n creates of each kind, plain and keyed, in turns (the
// kind that goes first alternates), -c at a time through the Go client;
// the service's CPU per create is read from /proc before and after each
// round, and on PostgreSQL the local server's backends' CPU too. Every
// keyed create has a key of its own, so none is a replay: this is the
// cost of storing the answer, the common path.

// idemRound is one round of one kind.
type idemRound struct {
	keyed     bool
	svcPerReq time.Duration
	pgPerReq  time.Duration
}

func (b *bench) runIdempotency(ctx context.Context, root string) error {
	fmt.Fprintf(b.out, "building ./cmd/recordhub ...\n")
	bin, err := buildService(ctx, root, b.work, "recordhub")
	if err != nil {
		return err
	}
	b.bin, b.apiBin = bin, bin
	results := map[string][]idemRound{}
	for _, db := range b.o.databases {
		rounds, err := b.idempotencyOn(ctx, bin, db)
		var skip *skipError
		switch {
		case errors.As(err, &skip):
			fmt.Fprintf(b.out, "%s: skipped: %v\n", db, skip.err)
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", db, err)
		}
		results[db] = rounds
	}
	reportIdempotency(b, results)
	return nil
}

func (b *bench) idempotencyOn(ctx context.Context, bin, db string) ([]idemRound, error) {
	st, err := b.startDatabase(ctx, bin, db)
	if err != nil {
		return nil, err
	}
	defer st.close()
	f, err := setUp(ctx, st.svc, st.adminKey)
	if err != nil {
		return nil, err
	}
	clients := map[bool]*client.Client{
		false: st.svc.as(f.key),
		true:  client.New(st.svc.url(""), f.key, client.WithHTTPClient(st.svc.client), client.WithIdempotencyKeys()),
	}
	conc := min(b.o.workers, 16)
	for _, keyed := range []bool{false, true} { // warm both paths
		if err := createWith(ctx, clients[keyed], f.writeModule, 200, conc); err != nil {
			return nil, err
		}
	}
	pid := st.svc.cmd.Process.Pid
	var out []idemRound
	for r := range b.o.idemRounds {
		for i := range 2 {
			keyed := (r+i)%2 == 1
			if err := st.svc.drainAccessLogs(ctx, time.Minute); err != nil {
				return nil, err
			}
			svc0, _ := processCPU(pid)
			pg0 := commandCPU("postgres")
			if err := createWith(ctx, clients[keyed], f.writeModule, b.o.idemN, conc); err != nil {
				return nil, err
			}
			// The access-log rows of the round are its cost too.
			if err := st.svc.drainAccessLogs(ctx, time.Minute); err != nil {
				return nil, err
			}
			svc1, _ := processCPU(pid)
			pg1 := commandCPU("postgres")
			round := idemRound{keyed: keyed, svcPerReq: (svc1 - svc0) / time.Duration(b.o.idemN)}
			if db == "postgres" {
				round.pgPerReq = (pg1 - pg0) / time.Duration(b.o.idemN)
			}
			fmt.Fprintf(b.out, "%s: round %d, keyed %t: service %s, postgres %s per create\n", db, r+1, keyed, round.svcPerReq, round.pgPerReq)
			out = append(out, round)
		}
	}
	for _, kind := range []string{"plain", "keyed"} {
		if b.o.profile[kind] {
			if err := b.profileCreates(ctx, st.svc, db, kind, clients[kind == "keyed"], f.writeModule, conc); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// profileCreates takes the service's CPU and allocation profiles over ten
// seconds of creates of one kind, after the measured rounds.
func (b *bench) profileCreates(ctx context.Context, svc *service, db, kind string, c *client.Client, module string, conc int) error {
	const secs = 10
	profiled := make(chan error, 2)
	for _, p := range []string{"profile", "allocs"} {
		path := filepath.Join(b.work, fmt.Sprintf("%s-%s-%s.pprof", p, db, kind))
		go func() { profiled <- svc.saveProfile(ctx, p, secs, path) }()
	}
	deadline := time.Now().Add(secs * time.Second)
	for time.Now().Before(deadline) {
		if err := createWith(ctx, c, module, 500, conc); err != nil {
			return err
		}
	}
	for range 2 {
		if err := <-profiled; err != nil {
			return err
		}
	}
	fmt.Fprintf(b.out, "%s: profiles in %s; read them with: go tool pprof -top %s %s\n", db, b.work, filepath.Join(b.work, "recordhub"),
		filepath.Join(b.work, fmt.Sprintf("profile-%s-%s.pprof", db, kind)))
	return nil
}

// createWith creates n records with c, conc at a time.
func createWith(ctx context.Context, c *client.Client, module string, n, conc int) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := c.CreateRecord(ctx, module, benchRecord); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// median of the rounds of one kind, by what per picks.
func median(rounds []idemRound, keyed bool, per func(idemRound) time.Duration) time.Duration {
	var ds []time.Duration
	for _, r := range rounds {
		if r.keyed == keyed {
			ds = append(ds, per(r))
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func reportIdempotency(b *bench, results map[string][]idemRound) {
	fmt.Fprintf(b.out, "\nrecord create, CPU per create (median of %d rounds of %d), -c %d:\n", b.o.idemRounds, b.o.idemN, min(b.o.workers, 16))
	w := tabwriter.NewWriter(b.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "db\tservice plain\tservice keyed\tkeyed ÷ plain\tpostgres plain\tpostgres keyed")
	for _, db := range b.o.databases {
		rounds, ok := results[db]
		if !ok {
			continue
		}
		svc := func(r idemRound) time.Duration { return r.svcPerReq }
		pg := func(r idemRound) time.Duration { return r.pgPerReq }
		plain, keyed := median(rounds, false, svc), median(rounds, true, svc)
		fmt.Fprintf(w, "%s\t%s\t%s\t%.2f×\t%s\t%s\n", db, plain, keyed, float64(keyed)/float64(plain),
			median(rounds, false, pg), median(rounds, true, pg))
	}
	w.Flush()
}
