package main

import (
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// receiver is the webhook receiver both tenants' endpoints point at, in the
// harness's process: it records every request and answers 204, or 500 to
// a share of them so that retries run too.
type receiver struct {
	srv       *http.Server
	url       string
	failShare float64

	mu       sync.Mutex
	requests []request
	last     time.Time
}

func startReceiver(failShare float64) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), failShare: failShare}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

// ServeHTTP records the request: the event id of webhook-id, the attempt,
// the record's id and version from the body, the time, and the answer.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var payload struct {
		Record struct {
			ID      string `json:"id"`
			Version int    `json:"version"`
		} `json:"record"`
	}
	_ = json.Unmarshal(body, &payload)
	attempt, _ := strconv.Atoi(req.Header.Get("X-Webhook-Attempt"))
	status := http.StatusNoContent
	if r.failShare > 0 && rand.Float64() < r.failShare {
		status = http.StatusInternalServerError
	}
	r.mu.Lock()
	r.requests = append(r.requests, request{
		Path:     strings.TrimPrefix(req.URL.Path, "/"),
		EventID:  req.Header.Get("Webhook-Id"),
		Attempt:  attempt,
		RecordID: payload.Record.ID,
		Version:  payload.Record.Version,
		At:       at,
		Status:   status,
	})
	r.last = at
	r.mu.Unlock()
	w.WriteHeader(status)
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.IsZero() {
		return neverReceived
	}
	return time.Since(r.last)
}

func (r *receiver) close() { r.srv.Close() }
