package activities

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is a DNS server on loopback that answers A and AAAA questions
// from a table the test may change (to rebind a name), and NXDOMAIN for
// names it does not know. Resolver returns a real Go resolver that asks it,
// so CheckURL and the dialer resolve exactly as in production.
type fakeDNS struct {
	conn net.PacketConn
	mu   sync.Mutex
	zone map[string][]netip.Addr
}

func newFakeDNS(t *testing.T, zone map[string][]string) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen fake dns: %v", err)
	}
	f := &fakeDNS{conn: pc, zone: map[string][]netip.Addr{}}
	for name, addrs := range zone {
		f.set(name, addrs...)
	}
	t.Cleanup(func() { pc.Close() })
	go f.serve()
	return f
}

// set makes name answer addrs; no addrs makes it unknown (NXDOMAIN).
func (f *fakeDNS) set(name string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(addrs) == 0 {
		delete(f.zone, name)
		return
	}
	f.zone[name] = nil
	for _, a := range addrs {
		f.zone[name] = append(f.zone[name], netip.MustParseAddr(a))
	}
}

func (f *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", f.conn.LocalAddr().String())
		},
	}
}

func (f *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := f.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if msg := f.answer(buf[:n]); msg != nil {
			f.conn.WriteTo(msg, from)
		}
	}
}

func (f *fakeDNS) answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	f.mu.Lock()
	addrs, known := f.zone[name]
	f.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			b.AResource(rr, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return nil
	}
	return msg
}
