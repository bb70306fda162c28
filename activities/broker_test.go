package activities

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeConn is a brokerConn that only knows whether it is closed.
type fakeConn struct{ isClosed atomic.Bool }

func (c *fakeConn) publish(context.Context, *brokerDest, *brokerMessage) (*brokerConfirm, error) {
	return &brokerConfirm{}, nil
}
func (c *fakeConn) remoteAddr() string { return "" }
func (c *fakeConn) closed() bool       { return c.isClosed.Load() }
func (c *fakeConn) close()             { c.isClosed.Store(true) }

// TestBrokerPool: one connection per key, shared; past the bound the
// least recently used one is closed; a closed one is dialled again; a
// failed dial is not kept; concurrent attempts to one broker dial once.
func TestBrokerPool(t *testing.T) {
	p := newBrokerPool(2)
	var dials atomic.Int32
	dial := func(context.Context, *brokerDest) (brokerConn, error) {
		dials.Add(1)
		return &fakeConn{}, nil
	}
	get := func(key string) *fakeConn {
		t.Helper()
		c, _, err := p.get(t.Context(), &brokerDest{key: key}, dial)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*fakeConn)
	}
	a := get("a")
	if get("a") != a || dials.Load() != 1 {
		t.Fatalf("a second get of one key dialled again (%d dials)", dials.Load())
	}
	get("b")
	get("a") // a is now the most recently used
	get("c") // b goes (closed in the background)
	if get("a") != a {
		t.Error("a was dropped, not the least recently used b")
	}
	b := get("b") // c goes
	if dials.Load() != 4 {
		t.Errorf("%d dials, want 4: b dialled again after it left", dials.Load())
	}
	p.closeAll()
	if !a.closed() || !b.closed() {
		t.Error("closeAll left a connection open")
	}

	p = newBrokerPool(2)
	c := get("a")
	c.close()
	if get("a") == c {
		t.Error("a closed connection was handed out again")
	}
	boom := errors.New("refused")
	if _, _, err := p.get(t.Context(), &brokerDest{key: "x"}, func(context.Context, *brokerDest) (brokerConn, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("failed dial: %v", err)
	}
	if get("x") == nil {
		t.Error("after a failed dial the next get has no connection")
	}

	p = newBrokerPool(2)
	dials.Store(0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { get("same") })
	}
	wg.Wait()
	if dials.Load() != 1 {
		t.Errorf("8 concurrent gets dialled %d times, want 1", dials.Load())
	}
}
