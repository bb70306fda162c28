package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
)

// receiver is the webhooks' endpoint, in the bench's process: it answers
// 204 and keeps the first arrival of every delivery, by the record the
// event is about (service deliveries on /hook) or by X-Bench-Id (the
// baseline's, on /baseline).
type receiver struct {
	*harness.Receiver
	mu       sync.Mutex
	records  map[string]time.Time    // record id → first arrival
	events   map[string]bool         // X-Webhook-Id seen
	sends    map[sendKey][]time.Time // arrivals on /hook per (event, attempt)
	arrived  []time.Time             // every request on /hook
	baseline map[string]time.Time
	requests atomic.Int64
}

// sendKey is one attempt of one event: X-Webhook-Id and X-Webhook-Attempt.
type sendKey struct{ event, attempt string }

func startReceiver() (*receiver, error) { return startHoldingReceiver(0) }

// startHoldingReceiver starts a receiver that holds every request for
// hold before it answers, or until the sender gives up.
func startHoldingReceiver(hold time.Duration) (*receiver, error) {
	r := &receiver{records: map[string]time.Time{}, events: map[string]bool{}, sends: map[sendKey][]time.Time{},
		baseline: map[string]time.Time{}}
	var err error
	r.Receiver, err = harness.StartReceiver(harness.ReceiverOptions{Hold: hold, Observe: r.observe})
	return r, err
}

func (r *receiver) observe(req harness.Request) {
	r.requests.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch req.Path {
	case "/hook":
		r.events[req.EventID] = true
		k := sendKey{req.EventID, strconv.Itoa(req.Attempt)}
		r.sends[k] = append(r.sends[k], req.At)
		r.arrived = append(r.arrived, req.At)
		if _, seen := r.records[req.RecordID]; !seen && req.RecordID != "" {
			r.records[req.RecordID] = req.At
		}
	case "/baseline":
		id := req.Header.Get("X-Bench-Id")
		if _, seen := r.baseline[id]; !seen && id != "" {
			r.baseline[id] = req.At
		}
	}
}

// arrivals returns the first arrival of each record in ids that has one.
func (r *receiver) arrivals(ids []string) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(ids))
	for _, id := range ids {
		if t, ok := r.records[id]; ok {
			out[id] = t
		}
	}
	return out
}

// waitFor waits until count() reaches n or the limit passes.
func waitFor(ctx context.Context, n int, limit time.Duration, count func() int) {
	deadline := time.Now().Add(limit)
	for count() < n && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// waitProgress waits until count() reaches n, or it has not grown for
// stall, or ctx ends.
func waitProgress(ctx context.Context, n int, stall time.Duration, count func() int) {
	last, since := count(), time.Now()
	for last < n && time.Since(since) < stall && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		if c := count(); c != last {
			last, since = c, time.Now()
		}
	}
}

// span returns the first and last of ts.
func span(ts []time.Time) time.Duration {
	if len(ts) < 2 {
		return 0
	}
	lo, hi := ts[0], ts[0]
	for _, t := range ts[1:] {
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	return hi.Sub(lo)
}

func rate(n int, span time.Duration) float64 {
	if n < 2 || span <= 0 {
		return 0
	}
	return float64(n-1) / span.Seconds()
}

// percentile of sorted ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	i := int(float64(len(ds))*p+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// baselineArrivals returns the first arrival of every floor workflow.
func (r *receiver) baselineArrivals() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Time, 0, len(r.baseline))
	for _, t := range r.baseline {
		out = append(out, t)
	}
	return out
}

// times returns the values of arrivals.
func times(arrivals map[string]time.Time) []time.Time {
	out := make([]time.Time, 0, len(arrivals))
	for _, t := range arrivals {
		out = append(out, t)
	}
	return out
}

// arrivedBetween counts the requests on /hook that arrived in [from, to].
func (r *receiver) arrivedBetween(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.arrived {
		if !t.Before(from) && !t.After(to) {
			n++
		}
	}
	return n
}

// doubled counts the (event, attempt) pairs that arrived more than once
// (an attempt sent twice where it was made once), and describes up to
// three of them.
func (r *receiver) doubled() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return countDoubled(r.sends, 3)
}

func countDoubled(sends map[sendKey][]time.Time, examples int) (int, []string) {
	n := 0
	var ex []string
	for _, k := range slices.SortedFunc(maps.Keys(sends), func(a, b sendKey) int {
		return cmp.Or(strings.Compare(a.event, b.event), strings.Compare(a.attempt, b.attempt))
	}) {
		ts := sends[k]
		if len(ts) < 2 {
			continue
		}
		n++
		if len(ex) < examples {
			ex = append(ex, fmt.Sprintf("%s attempt %s: %d requests over %s", k.event, k.attempt, len(ts), span(ts).Round(time.Millisecond)))
		}
	}
	return n, ex
}

// delivered is how many record deliveries have arrived, by record.
func (r *receiver) delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.records)
}
