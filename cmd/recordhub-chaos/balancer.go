package main

import (
	"net/http"
)

// replayedHeader marks an answer that the server did not compute again but
// stored from the first try under the same Idempotency-Key.
const replayedHeader = "Idempotent-Replayed"

// balancer is the load balancer in front of the API replicas, as an
// http.RoundTripper: it sends a write's first try to the replica the loader
// chose and each retry to the next one in turn, so that a write whose
// replica is down is answered by another, under the same key. It notes
// each try in the write's tries, which the request's context carries.
type balancer struct {
	apis []*service
	next http.RoundTripper
}

// tries is what the balancer saw of one write's tries. A write's tries
// are sent one after the other, each RoundTrip returning before the
// next begins and before the write reads them, so it needs no lock.
type tries struct {
	first      int    // index of the first try's replica
	n          int    // tries sent
	last       string // the last try's replica
	lastStatus int    // the last try's answer; 0: none
	replayed   bool   // the last answer carried Idempotent-Replayed: true
}

type triesKey struct{}

func (b *balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	tr, ok := req.Context().Value(triesKey{}).(*tries)
	if !ok {
		tr = &tries{} // a request of no write: the first replica
	}
	api := b.apis[(tr.first+tr.n)%len(b.apis)]
	tr.n++
	tr.last, tr.lastStatus, tr.replayed = api.name, 0, false
	// A RoundTripper must not change the request it is given.
	out := req.Clone(req.Context())
	out.URL.Host, out.Host = api.addr, ""
	res, err := b.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	tr.lastStatus = res.StatusCode
	tr.replayed = res.Header.Get(replayedHeader) == "true"
	return res, nil
}
