package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models/storetest"
)

// fakeReplica is an API replica that answers creates as script says,
// by the try's Idempotency-Key, and notes every try.
type fakeReplica struct {
	name   string
	script func(key string, try int) (status int, replayed bool)
	srv    *httptest.Server
	log    *tryLog
}

// tryLog is every try the replicas got, in order.
type tryLog struct {
	mu    sync.Mutex
	tries []try
	n     map[string]int // tries so far, by key
}

type try struct {
	Replica, Key string
	Write        int64 // custom_data.write of the body
}

func (l *tryLog) add(t try) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tries = append(l.tries, t)
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[t.Key]++
	return l.n[t.Key]
}

func (l *tryLog) all() []try {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]try(nil), l.tries...)
}

func (f *fakeReplica) service() *service {
	return &service{name: f.name, addr: f.srv.Listener.Addr().String()}
}

func startReplica(t *testing.T, name string, log *tryLog, script func(key string, try int) (int, bool)) *service {
	t.Helper()
	f := &fakeReplica{name: name, script: script, log: log}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			CustomData struct {
				Write int64 `json:"write"`
			} `json:"custom_data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			t.Errorf("%s: decode body: %v", name, err)
		}
		key := r.Header.Get("Idempotency-Key")
		n := log.add(try{Replica: name, Key: key, Write: in.CustomData.Write})
		status, replayed := script(key, n)
		w.Header().Set("Content-Type", "application/json")
		if replayed {
			w.Header().Set(replayedHeader, "true")
		}
		switch status {
		case http.StatusCreated:
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"id":"rec_%d","module_id":"mod_1","fields":{},"custom_data":{},"version":1}`, in.CustomData.Write)
		case http.StatusServiceUnavailable:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":"unavailable","message":"retry later","request_id":"req_%d"}`, n)
		case http.StatusConflict: // the key's first try still runs
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":"conflict","message":"still running","request_id":"req_%d"}`, n)
		default:
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":"HTTP %d","message":"scripted","request_id":"req_%d"}`, status, n)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f.service()
}

// downReplica is a replica whose port refuses connections.
func downReplica(t *testing.T, name string) *service {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return &service{name: name, addr: addr}
}

// TestWriteRetriesUnderOneKey: a write whose first replica is down and
// whose other replica is unavailable, then still running the write's
// first try (409), then answers its 201 again, is sent on both replicas in
// turn, always with the same key and body, and counts as acknowledged and
// replayed.
func TestWriteRetriesUnderOneKey(t *testing.T) {
	log := &tryLog{}
	down := downReplica(t, "api 1")
	up := startReplica(t, "api 2", log, func(key string, n int) (int, bool) {
		switch n {
		case 1:
			return http.StatusServiceUnavailable, false
		case 2:
			return http.StatusConflict, false
		}
		return http.StatusCreated, true
	})
	l := newLoader([]tenant{{name: "a", key: "k", moduleID: "mod_1"}}, []*service{down, up}, 10)
	l.next.Store(uint64(len(l.apis) - 1)) // the first write's first try goes to api 1
	l.retryWait = 10 * time.Millisecond

	w := l.write(context.Background(), l.tenants[0])

	if w.Status != http.StatusCreated || w.RecordID != "rec_1" || !w.Replayed {
		t.Errorf("write = %+v, want a replayed 201 of rec_1", w)
	}
	// Tries 1, 3 and 5 went to the replica that is down.
	if w.Tries != 6 || w.Replica != "api 2" || w.Key != "chaos-a-1" || w.N != 1 {
		t.Errorf("write = %+v, want 6 tries of chaos-a-1, the last on api 2", w)
	}
	want := []try{{"api 2", "chaos-a-1", 1}, {"api 2", "chaos-a-1", 1}, {"api 2", "chaos-a-1", 1}}
	if d := cmp.Diff(log.all(), want); d != "" {
		t.Errorf("tries the live replica got (-got +want):\n%s", d)
	}
}

// TestWriteEndsWithItsBound: a write that is never answered but 503 ends
// when its bound does, without a record: with its last answer when the
// bound ends a wait, or no answer when it cuts a try short.
func TestWriteEndsWithItsBound(t *testing.T) {
	log := &tryLog{}
	api := startReplica(t, "api 1", log, func(string, int) (int, bool) { return http.StatusServiceUnavailable, false })
	l := newLoader([]tenant{{name: "a", key: "k", moduleID: "mod_1"}}, []*service{api}, 10)
	l.retryWait = 10 * time.Millisecond
	// A parent deadline shorter than writeBound stands for the bound.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()

	w := l.write(ctx, l.tenants[0])

	ended := w.Status == http.StatusServiceUnavailable || w.Status == 0 && strings.Contains(w.Err, "deadline exceeded")
	if !ended || w.RecordID != "" || w.Replayed {
		t.Errorf("write = %+v, want no record, and its last answer (503) or none (the deadline)", w)
	}
	// The balancer counts a try the bound cut before the replica saw it.
	if got := len(log.all()); w.Tries < 2 || got != w.Tries && got != w.Tries-1 {
		t.Errorf("write counted %d tries, the replica got %d; want at least 2, the same or one fewer", w.Tries, got)
	}
}

// TestStuckWriteDoesNotStopTheOthers: while one write waits for its
// answer, the tenant's next writes go out and are answered.
func TestStuckWriteDoesNotStopTheOthers(t *testing.T) {
	log := &tryLog{}
	release := make(chan struct{})
	api := startReplica(t, "api 1", log, func(key string, _ int) (int, bool) {
		if key == "chaos-a-1" {
			<-release
		}
		return http.StatusCreated, false
	})
	l := newLoader([]tenant{{name: "a", key: "k", moduleID: "mod_1"}}, []*service{api}, 100)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		l.run(context.Background(), stop)
		close(done)
	}()
	// Registered after the replica's, so run first: the replica's Close
	// waits for the stuck request.
	finish := sync.OnceFunc(func() {
		close(stop)
		close(release)
		<-done
	})
	t.Cleanup(finish)
	storetest.Eventually(t, 5*time.Second, "five writes answered behind the stuck one", func() bool {
		return len(l.results()) >= 5
	})
	for _, w := range l.results() {
		if w.N == 1 {
			t.Fatalf("write 1 answered before its release: %+v", w)
		}
	}
	finish()

	ws := l.results()
	if !slices.ContainsFunc(ws, func(w write) bool { return w.N == 1 }) {
		t.Errorf("writes %+v, want write 1 among them once released", ws)
	}
	for _, w := range ws {
		if w.RecordID == "" {
			t.Errorf("write %+v not acknowledged", w)
		}
	}
	if l.skipped.Load() != 0 {
		t.Errorf("%d ticks skipped, want none", l.skipped.Load())
	}
}
