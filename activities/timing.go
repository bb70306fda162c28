package activities

import (
	"crypto/tls"
	"net"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/recordhub/recordhub/models"
)

// timing collects the parts of one request from httptrace. Its hooks may be
// called from the transport's goroutines (parallel DNS lookups, happy
// eyeballs), hence the mutex.
type timing struct {
	mu                  sync.Mutex
	dnsStart, dnsDone   time.Time
	connStart, connDone time.Time
	tlsStart, tlsDone   time.Time
	gotConn, firstByte  time.Time
	remoteIP            string
	tlsErr              error
}

func (t *timing) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { t.set(&t.dnsStart) },
		DNSDone:  func(httptrace.DNSDoneInfo) { t.set(&t.dnsDone) },
		ConnectStart: func(_, addr string) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.connStart.IsZero() {
				t.connStart = time.Now()
			}
			// The address being tried: a blocked or refused attempt's row
			// still names where it was going.
			t.remoteIP = hostOf(addr)
		},
		ConnectDone: func(_, addr string, err error) {
			if err == nil {
				t.mu.Lock()
				t.connDone, t.remoteIP = time.Now(), hostOf(addr)
				t.mu.Unlock()
			}
		},
		TLSHandshakeStart: func() { t.set(&t.tlsStart) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			t.mu.Lock()
			t.tlsDone, t.tlsErr = time.Now(), err
			t.mu.Unlock()
		},
		GotConn: func(info httptrace.GotConnInfo) {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.gotConn = time.Now()
			if info.Conn != nil {
				t.remoteIP = hostOf(info.Conn.RemoteAddr().String())
			}
		},
		GotFirstResponseByte: func() { t.set(&t.firstByte) },
	}
}

func (t *timing) set(at *time.Time) {
	t.mu.Lock()
	*at = time.Now()
	t.mu.Unlock()
}

// handshakeFailed returns the TLS handshake's error, if it failed.
func (t *timing) handshakeFailed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tlsErr
}

// fill writes the parts into the row. A part that did not happen (no DNS
// for an IP literal, no dial on a reused connection) stays null. FirstByteMS
// runs from having a connection to the first response byte: writing the
// request and the receiver's own processing.
func (t *timing) fill(row *models.WebhookDelivery) {
	t.mu.Lock()
	defer t.mu.Unlock()
	row.DNSMS = span(t.dnsStart, t.dnsDone)
	row.ConnectMS = span(t.connStart, t.connDone)
	row.TLSMS = span(t.tlsStart, t.tlsDone)
	row.FirstByteMS = span(t.gotConn, t.firstByte)
	row.RemoteIP = t.remoteIP
}

func span(from, to time.Time) *float64 {
	if from.IsZero() || to.IsZero() {
		return nil
	}
	v := ms(to.Sub(from))
	return &v
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
