package storetest

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/recordhub/recordhub/models"
)

// Proxy is a TCP forwarder between a store and the test's PostgreSQL,
// owned by the test, so that a test can take the database away and give
// it back: Stop is a server that is down (connections refused, every open
// connection broken), BlackHole a server that accepts connections and
// never answers, Start the server back.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	hole  bool
	cutOn []byte
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy in front of db's PostgreSQL server and returns
// it with db as seen through it: the same schema, reached through the
// proxy's port. It is stopped when the test ends.
func NewProxy(t testing.TB, db *DB) (*Proxy, *DB) {
	t.Helper()
	if db.Dialect != models.Postgres {
		t.Fatalf("a proxy stands in front of PostgreSQL, not %s", db.Dialect)
	}
	u, err := url.Parse(db.DSN)
	if err != nil {
		t.Fatalf("parse %s: %v", db.DSN, err)
	}
	p := &Proxy{t: t, target: u.Host, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() {
		p.Stop()
		p.wg.Wait()
	})
	u.Host = p.addr
	return p, &DB{Dialect: db.Dialect, DSN: u.String()}
}

// Addr is the proxy's address; it keeps it across Stop and Start.
func (p *Proxy) Addr() string { return p.addr }

// Stop closes the listener, so that connecting is refused, and every
// connection the proxy holds.
func (p *Proxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.dropLocked()
}

// Start listens again on the same address, forwarding as before.
func (p *Proxy) Start() {
	p.t.Helper()
	p.Stop()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy: listen again on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.hole = false
	p.mu.Unlock()
	p.serve(ln)
}

// BlackHole breaks every open connection, then accepts new ones and never
// answers them, as a host that is up while its database is not.
func (p *Proxy) BlackHole() {
	p.t.Helper()
	p.Start()
	p.mu.Lock()
	p.hole = true
	p.mu.Unlock()
}

// CutOn makes the proxy close, instead of forwarding, the next chunk a
// client sends that contains b: the server never sees that message, and
// the client's connection breaks under it. It applies once.
func (p *Proxy) CutOn(b []byte) {
	p.mu.Lock()
	p.cutOn = bytes.Clone(b)
	p.mu.Unlock()
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.handle(ln, c)
		}
	}()
}

func (p *Proxy) handle(ln net.Listener, client net.Conn) {
	p.mu.Lock()
	if p.ln != ln { // accepted just before Stop

		p.mu.Unlock()
		client.Close()
		return
	}
	p.conns[client] = struct{}{}
	hole := p.hole
	p.mu.Unlock()
	if hole {
		return // held open and silent until Stop or Start drops it
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.drop(client)
		return
	}
	p.mu.Lock()
	if _, ok := p.conns[client]; !ok { // dropped meanwhile
		p.mu.Unlock()
		server.Close()
		return
	}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.forward(server, client)
		p.drop(client, server)
	}()
	go func() {
		defer p.wg.Done()
		io.Copy(client, server)
		p.drop(client, server)
	}()
}

// forward copies what the client sends to the server, cutting both when
// a chunk holds the armed CutOn bytes.
func (p *Proxy) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if p.cut(buf[:n]) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) cut(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutOn == nil || !bytes.Contains(chunk, p.cutOn) {
		return false
	}
	p.cutOn = nil
	return true
}

func (p *Proxy) drop(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		if _, ok := p.conns[c]; ok {
			delete(p.conns, c)
			c.Close()
		}
	}
}

// dropLocked closes every connection, as a server's process that dies
// does.
func (p *Proxy) dropLocked() {
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}
