package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// maxInFlightWrites bounds each tenant's unanswered writes: past it a tick
// is skipped (and counted), so that a stalled API does not pile up
// goroutines.
const maxInFlightWrites = 64

// writeTimeout bounds one create.
const writeTimeout = 10 * time.Second

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

	mu      sync.Mutex
	writes  []write
	next    atomic.Uint64 // the replica of the next write
	skipped atomic.Int64
	seq     atomic.Int64
}

func newLoader(tenants []tenant, apis []*service, perSecond float64) *loader {
	return &loader{
		tenants: tenants,
		apis:    apis,
		every:   time.Duration(float64(time.Second) / perSecond),
		// Keep-alives off: a killed replica's pooled connections would
		// otherwise fail writes that a fresh dial sends to the new process.
		hc: &http.Client{Timeout: writeTimeout, Transport: &http.Transport{DisableKeepAlives: true}},
	}
}

// run writes until ctx ends, then waits for the writes under way.
func (l *loader) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range l.tenants {
		wg.Go(func() {
			var inFlight atomic.Int64
			var writes sync.WaitGroup
			tick := time.NewTicker(l.every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					writes.Wait()
					return
				case <-tick.C:
				}
				if inFlight.Load() >= maxInFlightWrites {
					l.skipped.Add(1)
					continue
				}
				inFlight.Add(1)
				writes.Go(func() {
					defer inFlight.Add(-1)
					l.writeOnce(t)
				})
			}
		})
	}
	wg.Wait()
}

// writeOnce creates one record on the next replica; when the replica
// cannot be reached (connection refused or reset: it is down), it tries the
// other one, as a new write.
func (l *loader) writeOnce(t tenant) {
	i := int(l.next.Add(1)) % len(l.apis)
	if down := l.create(t, l.apis[i]); down && len(l.apis) > 1 {
		l.create(t, l.apis[(i+1)%len(l.apis)])
	}
}

// create sends one create and records its outcome; down reports that the
// replica could not be reached.
func (l *loader) create(t tenant, api *service) (down bool) {
	n := l.seq.Add(1)
	in := client.RecordInput{
		Fields:     map[string]any{"title": fmt.Sprintf("chaos %s #%d", t.name, n)},
		CustomData: map[string]any{"write": n},
	}
	w := write{Tenant: t.name, Replica: api.name, At: time.Now()}
	rec, err := client.New(api.url(""), t.key, client.WithHTTPClient(l.hc)).CreateRecord(context.Background(), t.moduleID, in)
	var (
		ae *client.Error
		te *client.TransportError
	)
	switch {
	case err == nil:
		w.Status, w.RecordID = http.StatusCreated, rec.ID
	case errors.As(err, &ae):
		w.Status = ae.Status
	case errors.As(err, &te):
		w.Err = te.Err.Error()
		down = errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
	default: // an answer that is not a record
		w.Status, w.Err = http.StatusCreated, err.Error()
	}
	l.mu.Lock()
	l.writes = append(l.writes, w)
	l.mu.Unlock()
	return down
}

func (l *loader) results() []write {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]write(nil), l.writes...)
}
