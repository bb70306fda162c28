package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The peers' method: how the bench's README measures other webhook
// systems, applied to recordhub in the webhook group, so that its figures
// stand in the same table as theirs. peersEvents events are published by
// peersPublishers concurrent clients through the API (here: record
// creates), one local receiver takes them; the rate runs from the first
// publish to the last receipt, each event's latency from the moment its
// publish was sent to its receipt, and the machine's CPU (/proc/stat) is
// read over that same window.
const (
	peersEvents     = 200
	peersPublishers = 4
	peersWait       = 60 * time.Second // for the last receipt
	// The work a delivery leaves behind its receipt (the attempt's row, the
	// workflow's close and its visibility row, which Temporal may write
	// later) is not in the window; the run also waits until the service
	// has settled, using less than peersQuiet of a core over peersQuietFor,
	// and reports the machine's CPU until then too.
	peersQuiet    = 0.05
	peersQuietFor = 500 * time.Millisecond
	peersSettle   = 30 * time.Second
)

// peersResult is one run of the peers' method.
type peersResult struct {
	sent, delivered int
	span            time.Duration // first publish to last receipt
	p50, p99        time.Duration // publish → receipt
	cpu             time.Duration // the machine's, over span
	settled         time.Duration // the machine's, until the service settled
	settledAfter    time.Duration // from the last receipt
	// service is the CPU of the service's own processes until they
	// settled: unlike the machine's, it holds on a machine shared with
	// other work.
	service time.Duration
}

// serviceCPU reads the CPU the measured service's processes have used so
// far: `serve` alone in the embedded shape; the API, the workers, the
// Temporal server and PostgreSQL in the production shape.
type serviceCPU func() (time.Duration, error)

// processesCPU is a serviceCPU of the given processes' CPU and that of
// every process named by one of commands.
func processesCPU(svcs []*service, commands ...string) serviceCPU {
	return func() (time.Duration, error) {
		var total time.Duration
		for _, s := range svcs {
			d, err := processCPU(s.cmd.Process.Pid)
			if err != nil {
				return 0, err
			}
			total += d
		}
		for _, c := range commands {
			total += commandCPU(c)
		}
		return total, nil
	}
}

func (p peersResult) rate() float64 {
	if p.span <= 0 {
		return 0
	}
	return float64(p.delivered) / p.span.Seconds()
}

func (p peersResult) cpuPer() time.Duration { return per(p.cpu, p.delivered) }

func (p peersResult) settledPer() time.Duration { return per(p.settled, p.delivered) }

func per(d time.Duration, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// peersRun publishes peersEvents records to t's module through svc and
// measures them the peers' way; own reads the service's CPU.
func (b *bench) peersRun(ctx context.Context, tag string, svc *service, own serviceCPU, t prodTenant) (peersResult, error) {
	fmt.Fprintf(b.out, "%s: the peers' method: %d events from %d publishers ...\n", tag, peersEvents, peersPublishers)
	var (
		mu    sync.Mutex
		sends = make([]prodSent, 0, peersEvents)
		errs  []error
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	cpu0, err := machineCPU()
	if err != nil {
		return peersResult{}, err
	}
	svc0, err := own()
	if err != nil {
		return peersResult{}, err
	}
	start := time.Now()
	for range peersPublishers {
		wg.Go(func() {
			for next.Add(1) <= peersEvents {
				sent := time.Now()
				id, err := createRecord(ctx, svc, t.f)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					sends = append(sends, prodSent{id, sent})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return peersResult{}, fmt.Errorf("peers' method: %d of %d publishes failed, the first: %w", len(errs), peersEvents, errs[0])
	}
	ids := make([]string, len(sends))
	for i, s := range sends {
		ids[i] = s.id
	}
	// Polled often, so that the window closes close to the last receipt.
	deadline := time.Now().Add(peersWait)
	got := t.rcv.arrivals(ids)
	for len(got) < len(ids) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
		got = t.rcv.arrivals(ids)
	}
	cpu1, err := machineCPU()
	if err != nil {
		return peersResult{}, err
	}
	r := peersResult{sent: len(sends), delivered: len(got)}
	var (
		last time.Time
		lat  []time.Duration
	)
	for _, s := range sends {
		at, ok := got[s.id]
		if !ok {
			continue
		}
		lat = append(lat, at.Sub(s.at))
		if at.After(last) {
			last = at
		}
	}
	if len(lat) == 0 {
		return r, fmt.Errorf("peers' method: none of %d events arrived within %s", len(sends), peersWait)
	}
	slices.Sort(lat)
	r.span, r.cpu = last.Sub(start), cpu1-cpu0
	r.p50, r.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	quietAt, cpu2, svc2 := settle(ctx, own)
	r.settled, r.settledAfter, r.service = cpu2-cpu0, quietAt.Sub(last), svc2-svc0
	fmt.Fprintf(b.out, "%s: the peers' method: %d of %d delivered in %s (%.1f/s), p50 %s, p99 %s, machine CPU %s per delivery; %s until the service settled, %s later (the service's own processes: %s)\n",
		tag, r.delivered, r.sent, r.span.Round(time.Millisecond), r.rate(), ms(r.p50), ms(r.p99), ms(r.cpuPer()), ms(r.settledPer()), r.settledAfter.Round(time.Millisecond), ms(per(r.service, r.delivered)))
	return r, nil
}

// settle waits until the service has used less than peersQuiet of a core
// over peersQuietFor (or peersSettle has passed), and returns when that
// quiet stretch began, and the machine's and the service's CPU then: the
// stretch itself is idle time, not the run's.
func settle(ctx context.Context, own serviceCPU) (time.Time, time.Duration, time.Duration) {
	deadline := time.Now().Add(peersSettle)
	for {
		from := time.Now()
		machine, _ := machineCPU()
		c0, err := own()
		if err != nil || ctx.Err() != nil || from.After(deadline) {
			return from, machine, c0
		}
		time.Sleep(peersQuietFor)
		c1, err := own()
		if err != nil || float64(c1-c0) < peersQuiet*float64(peersQuietFor) {
			return from, machine, c0
		}
	}
}

// peersRows prints r as rows of a measure/value/target/result/notes table.
func peersRows(tw io.Writer, prefix string, r peersResult) {
	fmt.Fprintf(tw, "%sthe peers' method: deliveries/s\t%.1f\t-\t-\t%d events from %d publishers, first publish to last receipt: %d delivered in %s\n",
		prefix, r.rate(), peersEvents, peersPublishers, r.delivered, r.span.Round(time.Millisecond))
	fmt.Fprintf(tw, "%sthe peers' method: publish → receipt p50 / p99\t%s / %s\t-\t-\t\n", prefix, ms(r.p50), ms(r.p99))
	fmt.Fprintf(tw, "%sthe peers' method: machine CPU per delivery\t%s\t-\t-\t/proc/stat over the same window\n", prefix, ms(r.cpuPer()))
	fmt.Fprintf(tw, "%sthe same, until the service settled\t%s\t-\t-\tthe work left behind the last receipt too (%s after it)\n", prefix, ms(r.settledPer()), r.settledAfter.Round(time.Millisecond))
	fmt.Fprintf(tw, "%sthe same, the service's own processes\t%s\t-\t-\tholds on a machine shared with other work\n", prefix, ms(per(r.service, r.delivered)))
}
