package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// A write is sent again, under its one Idempotency-Key, until it is
// answered or writeBound has passed since its first try: longer than a
// PostgreSQL crash recovery, so that a write refused while the database was
// down is answered once it is back.
const (
	writeBound = 60 * time.Second
	// tryTimeout bounds one try: a try cut short is sent again, and the
	// server answers the repeat with the first try's outcome once it has
	// one (409 with Retry-After until then).
	tryTimeout = 10 * time.Second
	// maxRetryWait caps the wait between two tries, whatever Retry-After
	// or the client's doubling backoff says, so that a write is tried
	// again soon after the fault ends.
	maxRetryWait = 2 * time.Second
	// maxTries is more tries than fit in writeBound: the bound ends the
	// retries, not the count.
	maxTries = 1000
)

// tenant is one tenant of the load: a key, a module and an endpoint.
type tenant struct {
	name     string
	key      string
	moduleID string
	endpoint string
}

// loader writes records for every tenant at a steady rate, spread over the
// API replicas in turn.
type loader struct {
	tenants []tenant
	apis    []*service
	every   time.Duration
	hc      *http.Client
	// maxInFlight bounds each tenant's unanswered writes: past it a tick
	// is skipped (and counted), so that a stalled API does not pile up
	// goroutines. It is the rate times writeBound, which writes ended by
	// their bound never reach: a write stuck in its retries does not slow
	// the others.
	maxInFlight int64
	retryWait   time.Duration // the cap of one wait between tries

	mu      sync.Mutex
	writes  []write
	next    atomic.Uint64 // the replica of the next write's first try
	skipped atomic.Int64
	seq     atomic.Int64
}

func newLoader(tenants []tenant, apis []*service, perSecond float64) *loader {
	return &loader{
		tenants:     tenants,
		apis:        apis,
		every:       time.Duration(float64(time.Second) / perSecond),
		maxInFlight: int64(math.Ceil(perSecond*writeBound.Seconds())) + 1,
		retryWait:   maxRetryWait,
		// Keep-alives off: a killed replica's pooled connections would
		// otherwise fail writes that a fresh dial sends to the new process.
		hc: &http.Client{Timeout: tryTimeout, Transport: &balancer{
			apis: apis, next: &http.Transport{DisableKeepAlives: true},
		}},
	}
}

// run writes until stop is closed, then waits for the writes under way,
// each to its answer or its bound; ctx ending cuts them short.
func (l *loader) run(ctx context.Context, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for _, t := range l.tenants {
		wg.Go(func() {
			var inFlight atomic.Int64
			var writes sync.WaitGroup
			tick := time.NewTicker(l.every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					writes.Wait()
					return
				case <-ctx.Done():
					writes.Wait()
					return
				case <-tick.C:
				}
				if inFlight.Load() >= l.maxInFlight {
					l.skipped.Add(1)
					continue
				}
				inFlight.Add(1)
				writes.Go(func() {
					defer inFlight.Add(-1)
					w := l.write(ctx, t)
					l.mu.Lock()
					l.writes = append(l.writes, w)
					l.mu.Unlock()
				})
			}
		})
	}
	wg.Wait()
}

// write creates one record, its first try on the next replica, and sends
// it again with the same Idempotency-Key (on the replicas in turn) after a
// 429, 503, 409 with Retry-After or no answer, until it is answered
// otherwise or writeBound has passed.
func (l *loader) write(ctx context.Context, t tenant) write {
	n := l.seq.Add(1)
	w := write{Tenant: t.name, N: n, Key: fmt.Sprintf("chaos-%s-%d", t.name, n), At: time.Now()}
	in := client.RecordInput{
		Fields:     map[string]any{"title": fmt.Sprintf("chaos %s #%d", t.name, n)},
		CustomData: map[string]any{"write": n},
	}
	tr := &tries{first: int(l.next.Add(1) % uint64(len(l.apis)))}
	ctx, cancel := context.WithTimeout(ctx, writeBound)
	defer cancel()
	ctx = context.WithValue(client.IdempotencyKey(ctx, w.Key), triesKey{}, tr)
	// The base URL names no replica: the balancer picks one for each try.
	c := client.New("http://api", t.key, client.WithHTTPClient(l.hc),
		client.WithRetries(maxTries), client.WithMaxRetryWait(l.retryWait))
	rec, err := c.CreateRecord(ctx, t.moduleID, in)
	w.Took, w.Tries, w.Replica = time.Since(w.At), tr.n, tr.last
	var (
		ae *client.Error
		te *client.TransportError
	)
	switch {
	case err == nil:
		w.Status, w.RecordID, w.Replayed = http.StatusCreated, rec.ID, tr.replayed
	case errors.As(err, &ae): // the last answer, when the bound ended the retries
		w.Status = ae.Status
	case errors.As(err, &te):
		w.Err = te.Err.Error()
	case tr.n > 0 && tr.lastStatus == http.StatusCreated: // an answer that is not a record
		w.Status, w.Err = http.StatusCreated, err.Error()
	default: // the bound ended while the client waited before a retry
		w.Err = err.Error()
	}
	return w
}

func (l *loader) results() []write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]write(nil), l.writes...)
}
