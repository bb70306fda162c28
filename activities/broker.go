package activities

import (
	"container/list"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/recordhub/recordhub/models"
)

// Broker destinations (see models.BrokerURL): an attempt to an amqp, amqps
// or nats endpoint publishes one message instead of sending a request, and
// everything else about the attempt stays as it is: its row written in
// flight and finished, its throttle slot, its signatures, its place in the
// retry schedule. The request prepare builds is the message's envelope:
// its body is the message's body and its headers, named in lower case,
// the message's headers (AMQP headers, NATS headers), with the event id
// as the message id.
//
// Success is the broker's confirmation within the attempt's timeout: an
// AMQP publisher confirm (basic.ack) of a persistent message published
// mandatory, so that a message no queue takes comes back (basic.return)
// and fails the attempt as unroutable; a JetStream PubAck, so that a
// subject no stream captures fails it as unroutable too.
//
// Connections are pooled per worker, one per broker and login, at most
// maxBrokerConns of them (least recently used closed first); a closed one
// is dialled again by the next attempt that needs it. Dialling goes
// through the same guarded dialer as HTTP (every address checked) and
// gives up after brokerDialTimeout, so a broker that is down fails its
// attempts fast and the retry schedule takes over.

const (
	// maxBrokerConns bounds a Deliverer's broker connections.
	maxBrokerConns = 64
	// brokerDialTimeout bounds connecting and logging in to a broker.
	brokerDialTimeout = 5 * time.Second
)

// brokerDest is where a broker endpoint's attempt publishes.
type brokerDest struct {
	// url holds the login in clear: never shown.
	url *models.BrokerURL
	// target is the routing key (AMQP) or subject (NATS), filled in.
	target string
	// tls is the endpoint's TLS material made a config; nil without any.
	tls *tls.Config
	// key identifies the connection: broker, login and TLS material.
	key string
}

// brokerDestFor reads a broker endpoint's URL, in clear, for an event of
// type eventType whose payload is payload; tlsKey identifies the TLS
// material (tlsCfg, nil when none).
func brokerDestFor(clearURL, eventType, payload string, tlsCfg *tls.Config, tlsKey string) (*brokerDest, error) {
	b, err := models.ParseBrokerURL(clearURL)
	if err != nil {
		return nil, err
	}
	var body struct {
		Module *struct {
			Slug string `json:"slug"`
		} `json:"module"`
	}
	module := ""
	if json.Unmarshal([]byte(payload), &body) == nil && body.Module != nil {
		module = body.Module.Slug
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{
		b.Kind, strconv.FormatBool(b.TLS), b.Host, strconv.Itoa(b.Port), b.User, b.Password, strconv.FormatBool(b.HasPassword), b.VHost, tlsKey,
	}, "\x00")))
	return &brokerDest{url: b, target: b.Target(eventType, module), tls: tlsCfg, key: hex.EncodeToString(sum[:])}, nil
}

// brokerConn is one pooled connection to a broker.
type brokerConn interface {
	// publish sends m and waits for the broker's confirmation, which it
	// returns; ctx bounds the wait.
	publish(ctx context.Context, dest *brokerDest, m *brokerMessage) (*brokerConfirm, error)
	remoteAddr() string
	closed() bool
	close()
}

// brokerMessage is what one attempt publishes.
type brokerMessage struct {
	id, eventType string
	timestamp     time.Time
	body          []byte
	// headers are the message's headers, names in lower case.
	headers map[string]string
}

// brokerConfirm is a broker's confirmation, as the row keeps it.
type brokerConfirm struct {
	// AMQP: the delivery tag the ack confirmed.
	DeliveryTag uint64 `json:"delivery_tag,omitempty"`
	// JetStream's PubAck.
	Stream    string `json:"stream,omitempty"`
	Sequence  uint64 `json:"seq,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Domain    string `json:"domain,omitempty"`
}

// brokerError is a broker's refusal: the code and message the row keeps.
type brokerError struct {
	code, message string
	err           error
}

func (e *brokerError) Error() string { return e.message }
func (e *brokerError) Unwrap() error { return e.err }

// notSentError is a publish that failed on a pooled connection found
// dead: it died since the last attempt (a broker restarted, a proxy
// dropped it), which showed as the channel was opened, the message
// written or its confirmation awaited. The message did not reach a live
// broker, or only just before the connection died; the attempt dials again
// and publishes once more, so that a broker restart between two attempts
// costs no retry. A repeat, were it one, carries the same message id,
// on which JetStream and receivers dedupe.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// messageOf makes the message of req (see prepare): its headers with
// lower-case names, the content type included.
func messageOf(req *http.Request, eventID, eventType string, body []byte, at time.Time) *brokerMessage {
	m := &brokerMessage{id: eventID, eventType: eventType, timestamp: at, body: body, headers: map[string]string{}}
	for name, values := range req.Header {
		if len(values) > 0 {
			m.headers[strings.ToLower(name)] = strings.Join(values, ", ")
		}
	}
	return m
}

// brokerHeaders is what a broker attempt's row shows as its request's
// headers: the message's headers as sent, the values of the endpoint's
// custom headers masked, and its properties as pseudo-headers (":exchange",
// ":routing_key", ":subject", …), as HTTP/2 names its own.
func brokerHeaders(req *http.Request, dest *brokerDest, eventID string) models.Headers {
	h := models.Headers{}
	for name, values := range sentHeaders(req) {
		switch name {
		case "Host", "Content-Length":
			continue
		}
		h[strings.ToLower(name)] = values
	}
	one := func(k, v string) { h[k] = []string{v} }
	switch dest.url.Kind {
	case models.DestinationAMQP:
		one(":vhost", dest.url.VHost)
		one(":exchange", dest.url.Exchange)
		one(":routing_key", dest.target)
		one(":mandatory", "true")
		one(":delivery_mode", "2")
		one(":message_id", eventID)
		one(":content_type", req.Header.Get("Content-Type"))
		delete(h, "content-type") // a property in AMQP, not a header
	case models.DestinationNATS:
		one(":subject", dest.target)
		one(natsMsgIDHeader, eventID)
	}
	return h
}

// publish is send for a broker endpoint: it publishes the message req
// carries and fills row with the confirmation, or the broker's error.
func (d *Deliverer) publish(ctx context.Context, snd *sender, req *http.Request, row *models.WebhookDelivery) *failure {
	ctx, cancel := context.WithTimeout(ctx, d.schedule.AttemptTimeout)
	defer cancel()
	ts, _ := strconv.ParseInt(req.Header.Get(HeaderStdTimestamp), 10, 64)
	m := messageOf(req, req.Header.Get(HeaderStdID), req.Header.Get(HeaderEvent), []byte(row.RequestBody), time.Unix(ts, 0).UTC())

	begin := time.Now()
	conn, dialled, err := d.brokers.get(ctx, snd.broker, d.dialBroker)
	if dialled {
		row.ConnectMS = ptrTo(ms(time.Since(begin)))
	}
	if err != nil {
		return d.fail(row, err, errors.Is(ctx.Err(), context.DeadlineExceeded), nil)
	}
	row.RemoteIP = conn.remoteAddr()
	// The throttle's send time, as an HTTP attempt stamps it when its
	// request is written.
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteRequest != nil {
		tr.WroteRequest(httptrace.WroteRequestInfo{})
	}
	sent := time.Now()
	c, err := conn.publish(ctx, snd.broker, m)
	var notSent *notSentError
	if err != nil && !dialled && errors.As(err, &notSent) {
		// The pooled connection died since the last attempt: once more on
		// a new one.
		d.brokers.discard(snd.broker, conn)
		if conn, _, err = d.brokers.get(ctx, snd.broker, d.dialBroker); err != nil {
			return d.fail(row, err, errors.Is(ctx.Err(), context.DeadlineExceeded), nil)
		}
		row.RemoteIP = conn.remoteAddr()
		sent = time.Now()
		c, err = conn.publish(ctx, snd.broker, m)
	}
	row.FirstByteMS = ptrTo(ms(time.Since(sent)))
	if err != nil {
		return d.fail(row, err, errors.Is(ctx.Err(), context.DeadlineExceeded), nil)
	}
	out, _ := json.Marshal(c)
	row.ResponseBody = string(out)
	row.ResponseHeaders = models.Headers{"Content-Type": {"application/json"}}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// dialBroker connects to dest's broker through the guarded dialer.
func (d *Deliverer) dialBroker(ctx context.Context, dest *brokerDest) (brokerConn, error) {
	ctx, cancel := context.WithTimeout(ctx, min(brokerDialTimeout, d.schedule.AttemptTimeout))
	defer cancel()
	dialer := *d.dialer
	if dl, ok := ctx.Deadline(); ok {
		dialer.Deadline = dl
	}
	switch dest.url.Kind {
	case models.DestinationAMQP:
		return dialAMQP(ctx, &dialer, dest)
	case models.DestinationNATS:
		return dialNATS(ctx, &dialer, dest)
	}
	return nil, fmt.Errorf("no broker of kind %q", dest.url.Kind)
}

// brokerPool holds a Deliverer's broker connections, by brokerDest.key.
type brokerPool struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *brokerEntry, front: most recently used
	items map[string]*list.Element
}

// brokerEntry is one broker's connection; mu is held while it is dialled,
// so that one attempt dials and the others to the same broker wait for it.
type brokerEntry struct {
	key  string
	mu   sync.Mutex
	conn brokerConn
}

func newBrokerPool(maxConns int) *brokerPool {
	return &brokerPool{max: maxConns, order: list.New(), items: map[string]*list.Element{}}
}

// get returns dest's connection, dialled by dial when there is none or it
// was closed; dialled reports that it was.
func (p *brokerPool) get(ctx context.Context, dest *brokerDest, dial func(context.Context, *brokerDest) (brokerConn, error)) (conn brokerConn, dialled bool, err error) {
	p.mu.Lock()
	var e *brokerEntry
	if el, ok := p.items[dest.key]; ok {
		p.order.MoveToFront(el)
		e = el.Value.(*brokerEntry)
	} else {
		e = &brokerEntry{key: dest.key}
		p.items[dest.key] = p.order.PushFront(e)
		for p.order.Len() > p.max {
			old := p.order.Remove(p.order.Back()).(*brokerEntry)
			delete(p.items, old.key)
			go old.close() // without p.mu: it may be dialling
		}
	}
	p.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn != nil && !e.conn.closed() {
		return e.conn, false, nil
	}
	if e.conn != nil {
		e.conn.close()
		e.conn = nil
	}
	c, err := dial(ctx, dest)
	if err != nil {
		return nil, true, err
	}
	e.conn = c
	return c, true, nil
}

// discard closes conn and forgets it, when it is still dest's.
func (p *brokerPool) discard(dest *brokerDest, conn brokerConn) {
	p.mu.Lock()
	el, ok := p.items[dest.key]
	p.mu.Unlock()
	if !ok {
		return
	}
	e := el.Value.(*brokerEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn == conn {
		e.conn.close()
		e.conn = nil
	}
}

func (e *brokerEntry) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn != nil {
		e.conn.close()
		e.conn = nil
	}
}

// closeAll closes every connection (tests, and a Deliverer going away).
func (p *brokerPool) closeAll() {
	p.mu.Lock()
	entries := make([]*brokerEntry, 0, len(p.items))
	for el := p.order.Front(); el != nil; el = el.Next() {
		entries = append(entries, el.Value.(*brokerEntry))
	}
	p.order.Init()
	clear(p.items)
	p.mu.Unlock()
	for _, e := range entries {
		e.close()
	}
}

// remoteIP is the address part of host:port.
func remoteIP(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return host
}
