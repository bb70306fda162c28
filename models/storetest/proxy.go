package storetest

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strings"
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

	mu       sync.Mutex
	ln       net.Listener
	hole     bool
	cutOn    []byte
	cutAfter []byte
	// cutCancel withholds the next cancel request, sent by the client a
	// CutAfterSent cut (cutAfterSent).
	cutCancel bool
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
	// sent counts what clients sent through the proxy (Sent).
	sent Wire
}

// Wire counts what clients sent to the server: statements, each simple
// query (BEGIN and COMMIT are sent so) and each execution of a prepared
// one, leaving out the empty query database/sql's pool sends to check an
// idle connection; and transactions, the statements that are a BEGIN.
type Wire struct {
	Statements, Transactions int
}

// Sent returns what clients sent since the proxy started or since the
// last ResetSent, as the server received it.
func (p *Proxy) Sent() Wire {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

// ResetSent starts Sent's counts afresh.
func (p *Proxy) ResetSent() {
	p.mu.Lock()
	p.sent = Wire{}
	p.mu.Unlock()
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
	p := NewTCPProxy(t, u.Host)
	u.Host = p.addr
	return p, &DB{Dialect: db.Dialect, DSN: u.String()}
}

// NewTCPProxy starts a proxy in front of any TCP server (a message broker,
// say), on a loopback port of its own; Stop, Start and BlackHole work as
// for PostgreSQL, the statement counts mean nothing. It is stopped when the
// test ends.
func NewTCPProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{t: t, target: target, conns: map[net.Conn]struct{}{}}
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
	return p
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

// CutAfterSent makes the proxy forward the next chunk a client sends that
// contains b, then close the connection before the server's answer can
// reach the client: the server acts on the message (a COMMIT commits) and
// the client never learns it did. It applies once. The cancel request
// the cut client then sends (pgx sends one for the statement it lost) is
// withheld: it would race the server, which could then not act on the
// message after all.
func (p *Proxy) CutAfterSent(b []byte) {
	p.mu.Lock()
	p.cutAfter = bytes.Clone(b)
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
		if !p.forward(server, client) {
			p.drop(client, server)
		}
	}()
	go func() {
		defer p.wg.Done()
		io.Copy(client, server)
		p.drop(client, server)
	}()
}

// forward copies what the client sends to the server, cutting both when
// a chunk holds the armed CutOn bytes. It reports whether it cut the
// client only, after a chunk holding the CutAfterSent bytes.
func (p *Proxy) forward(dst, src net.Conn) (clientCut bool) {
	buf := make([]byte, 32<<10)
	msgs := &messages{p: p}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if p.cut(buf[:n]) || !msgs.started && p.withholdCancel(buf[:n]) {
				return false
			}
			// The client's side is cut before the chunk goes on, so that
			// no answer to it can reach the client; the server's is left
			// to act on it and answer, which ends the copy back (handle)
			// on the cut client.
			clientCut = p.cutAfterSent(buf[:n])
			if clientCut {
				p.drop(src)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return clientCut
			}
			msgs.read(buf[:n])
			if clientCut {
				return true
			}
		}
		if err != nil {
			return false
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

func (p *Proxy) cutAfterSent(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutAfter == nil || !bytes.Contains(chunk, p.cutAfter) {
		return false
	}
	p.cutAfter, p.cutCancel = nil, true
	return true
}

// cancelRequest is the code of the startup message that cancels another
// connection's statement.
const cancelRequest = 80877102

// withholdCancel reports whether chunk, the first a client sent, is the
// cancel request of a client that CutAfterSent cut.
func (p *Proxy) withholdCancel(chunk []byte) bool {
	if len(chunk) < 8 || binary.BigEndian.Uint32(chunk[4:8]) != cancelRequest {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	withhold := p.cutCancel
	p.cutCancel = false
	return withhold
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

// messages splits what one client sends into PostgreSQL's frontend
// messages, across reads, and counts its statements in p.sent. The first
// message (startup, or a request for TLS or GSS encryption) has no type
// byte; every later one is a type byte and a length.
type messages struct {
	p       *Proxy
	started bool
	head    []byte // the header read so far
	typ     byte
	left    int    // the bytes of the message's body still to come
	body    []byte // the first bytes of its body
}

// The codes of the startup messages that ask for encryption, after which
// the client sends its startup message proper (or negotiates).
const (
	sslRequest = 80877103
	gssRequest = 80877104
)

func (m *messages) headLen() int {
	if m.started {
		return 5
	}
	return 4
}

func (m *messages) read(b []byte) {
	for len(b) > 0 {
		if m.left == 0 {
			n := min(m.headLen()-len(m.head), len(b))
			m.head = append(m.head, b[:n]...)
			b = b[n:]
			if len(m.head) < m.headLen() {
				return
			}
			m.typ, m.left = 0, int(binary.BigEndian.Uint32(m.head[len(m.head)-4:]))-4
			if m.started {
				m.typ = m.head[0]
			}
			m.body = m.body[:0]
			if m.left <= 0 {
				m.end()
				continue
			}
		}
		n := min(m.left, len(b))
		if len(m.body) < 16 {
			m.body = append(m.body, b[:min(n, 16-len(m.body))]...)
		}
		m.left -= n
		b = b[n:]
		if m.left == 0 {
			m.end()
		}
	}
}

// end counts the message just read.
func (m *messages) end() {
	m.head, m.left = m.head[:0], 0
	if !m.started {
		if len(m.body) < 4 {
			return
		}
		code := binary.BigEndian.Uint32(m.body)
		m.started = code != sslRequest && code != gssRequest
		return
	}
	if m.typ != 'Q' && m.typ != 'E' {
		return
	}
	text := strings.ToLower(strings.TrimSpace(strings.TrimRight(string(m.body), "\x00")))
	if m.typ == 'Q' && (text == "" || text == ";" || strings.HasPrefix(text, "-- ping")) {
		return
	}
	m.p.mu.Lock()
	m.p.sent.Statements++
	if m.typ == 'Q' && strings.HasPrefix(text, "begin") {
		m.p.sent.Transactions++
	}
	m.p.mu.Unlock()
}
