package main

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/recordhub/recordhub/cmd/internal/harness"
)

// receiver is the webhook receiver both tenants' endpoints point at, in the
// harness's process: it records every request and answers 204, or 500 to
// a share of them so that retries run too.
type receiver struct {
	*harness.Receiver
	url string

	mu       sync.Mutex
	requests []request
}

func startReceiver(failShare float64) (*receiver, error) {
	r := &receiver{}
	var err error
	if r.Receiver, err = harness.StartReceiver(harness.ReceiverOptions{FailShare: failShare, Observe: r.observe}); err != nil {
		return nil, err
	}
	r.url = r.URL("")
	return r, nil
}

// observe records the request under its tenant's path.
func (r *receiver) observe(req harness.Request) {
	req.Path, req.Header = strings.TrimPrefix(req.Path, "/"), nil
	r.mu.Lock()
	r.requests = append(r.requests, req)
	r.mu.Unlock()
}

// seen returns a copy of the requests so far.
func (r *receiver) seen() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.requests...)
}

// neverReceived is quietFor before the first request.
const neverReceived = time.Duration(math.MaxInt64)

// quietFor is how long no request has arrived.
func (r *receiver) quietFor() time.Duration {
	last := r.Last()
	if last.IsZero() {
		return neverReceived
	}
	return time.Since(last)
}

func (r *receiver) close() { r.Close() }
