package harness

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Request is one request a Receiver took, as the service sends deliveries.
type Request struct {
	Path     string // as requested, "/hook"
	EventID  string // X-Webhook-Id (Webhook-Id)
	Attempt  int    // X-Webhook-Attempt
	RecordID string // the body's record
	Version  int
	At       time.Time // when it arrived
	Status   int       // the receiver's answer
	// Header is the request's; nil in what Receiver keeps.
	Header http.Header
}

// ReceiverOptions set up a Receiver.
type ReceiverOptions struct {
	// FailShare is the share of requests answered 500 (so that retries
	// run too); the others are answered 204.
	FailShare float64
	// Hold is how long each request is held before it is answered, or
	// until the sender gives up; 0 answers at once.
	Hold time.Duration
	// Observe, when set, is called with every request as it arrives,
	// Header included, before the hold and the answer.
	Observe func(Request)
}

// Receiver is a webhook receiver on a loopback port of the harness's
// process.
type Receiver struct {
	o    ReceiverOptions
	srv  *http.Server
	addr string

	mu   sync.Mutex
	last time.Time
}

// StartReceiver starts a receiver on a free loopback port.
func StartReceiver(o ReceiverOptions) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{o: o, addr: ln.Addr().String()}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// URL is the receiver's URL of path ("/hook").
func (r *Receiver) URL(path string) string { return "http://" + r.addr + path }

// Close stops the receiver at once.
func (r *Receiver) Close() error { return r.srv.Close() }

// ServeHTTP reads the request's delivery headers and the record's id and
// version from its body, shows it to Observe, and answers.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var payload struct {
		Record struct {
			ID      string `json:"id"`
			Version int    `json:"version"`
		} `json:"record"`
	}
	_ = json.Unmarshal(body, &payload)
	status := http.StatusNoContent
	if r.o.FailShare > 0 && rand.Float64() < r.o.FailShare {
		status = http.StatusInternalServerError
	}
	id := req.Header.Get("X-Webhook-Id")
	if id == "" {
		id = req.Header.Get("Webhook-Id")
	}
	attempt, _ := strconv.Atoi(req.Header.Get("X-Webhook-Attempt"))
	r.mu.Lock()
	r.last = at
	r.mu.Unlock()
	if r.o.Observe != nil {
		r.o.Observe(Request{Path: req.URL.Path, EventID: id, Attempt: attempt, RecordID: payload.Record.ID,
			Version: payload.Record.Version, At: at, Status: status, Header: req.Header})
	}
	if r.o.Hold > 0 {
		select {
		case <-time.After(r.o.Hold):
		case <-req.Context().Done():
		}
	}
	w.WriteHeader(status)
}

// Last is when the last request arrived; zero before the first.
func (r *Receiver) Last() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}
