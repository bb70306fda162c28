package main

import (
	"context"
	"fmt"
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
)

// peersResult is one run of the peers' method.
type peersResult struct {
	sent, delivered int
	span            time.Duration // first publish to last receipt
	p50, p99        time.Duration // publish → receipt
	cpu             time.Duration // the machine's, over span
}

func (p peersResult) rate() float64 {
	if p.span <= 0 {
		return 0
	}
	return float64(p.delivered) / p.span.Seconds()
}

func (p peersResult) cpuPer() time.Duration {
	if p.delivered == 0 {
		return 0
	}
	return p.cpu / time.Duration(p.delivered)
}

// peersRun publishes peersEvents records to t's module and measures them
// the peers' way.
func (b *bench) peersRun(ctx context.Context, svc *service, t prodTenant) (peersResult, error) {
	fmt.Fprintf(b.out, "webhooks: the peers' method: %d events from %d publishers ...\n", peersEvents, peersPublishers)
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
	fmt.Fprintf(b.out, "webhooks: the peers' method: %d of %d delivered in %s (%.1f/s), p50 %s, p99 %s, machine CPU %s per delivery\n",
		r.delivered, r.sent, r.span.Round(time.Millisecond), r.rate(), ms(r.p50), ms(r.p99), ms(r.cpuPer()))
	return r, nil
}
