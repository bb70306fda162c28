package activities

import (
	"container/list"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/recordhub/recordhub/models"
)

// Bounds of a Deliverer's per-endpoint caches: past them the least
// recently used endpoint's entry goes (its token is fetched again, its
// connections are closed).
const (
	maxCachedTokens     = 4096
	maxCachedTLSClients = 256
)

// sender is how one attempt's request goes out: through the endpoint's own
// client when it has TLS material, else the Deliverer's; with an access
// token from its token endpoint when it has auth.
type sender struct {
	client *http.Client
	// endpointID and auth, with its cache key, when the endpoint has auth.
	endpointID string
	auth       *models.EndpointAuth
	authKey    string
	// token is the access token sent.
	token string
	// broker, for a broker endpoint, is where its message goes (see
	// broker.go); nil for HTTP.
	broker *brokerDest
}

// headersOf is what the attempt's row shows as the request's headers.
func (s *sender) headersOf(req *http.Request) models.Headers {
	if s.broker != nil {
		return brokerHeaders(req, s.broker, req.Header.Get(HeaderStdID))
	}
	return sentHeaders(req)
}

// brokerFor reads a broker endpoint's destination for ev, its login in
// clear, with its TLS material when it has some.
func (d *Deliverer) brokerFor(ep *models.WebhookEndpoint, ev *models.Event, tlsm *models.EndpointTLS) (*brokerDest, error) {
	clear, err := d.store.EndpointURL(ep)
	if err != nil {
		return nil, err
	}
	var (
		cfg *tls.Config
		key string
	)
	if tlsm != nil {
		if cfg, err = tlsConfigOf(tlsm); err != nil {
			return nil, err
		}
		key = configKey(ep.TLS)
	}
	return brokerDestFor(clear, ev.Type, ev.Payload, cfg, key)
}

// configKey identifies a sealed configuration: a change re-seals it (with
// a new nonce), so a PATCH takes effect at the next attempt.
func configKey(sealed string) string {
	sum := sha256.Sum256([]byte(sealed))
	return hex.EncodeToString(sum[:16])
}

// senderFor opens the endpoint's credentials and picks its client.
func (d *Deliverer) senderFor(ep *models.WebhookEndpoint, auth *models.EndpointAuth, tlsm *models.EndpointTLS) (sender, error) {
	s := sender{client: d.client, endpointID: ep.ID}
	if auth != nil {
		s.auth, s.authKey = auth, configKey(ep.Auth)
	}
	if tlsm != nil && !models.IsBrokerURL(ep.URL) {
		c, err := d.tlsClients.get(ep.ID, configKey(ep.TLS), func() (*http.Client, error) { return d.newTLSClient(tlsm) })
		if err != nil {
			return s, err
		}
		s.client = c
	}
	return s, nil
}

// newTLSClient is the Deliverer's client with the endpoint's TLS material:
// the same guarded dialer, timeouts and redirect rule; its client
// certificate presented when the receiver asks for one; the receiver
// verified against the CA bundle when there is one, else the system's
// roots. Verification is never skipped.
func (d *Deliverer) newTLSClient(m *models.EndpointTLS) (*http.Client, error) {
	cfg, err := tlsConfigOf(m)
	if err != nil {
		return nil, err
	}
	t := d.transport.Clone()
	t.TLSClientConfig = cfg
	return &http.Client{Transport: t, CheckRedirect: d.client.CheckRedirect}, nil
}

// defaultTLS is the TLS configuration of a destination without TLS
// material of its own: the system's roots.
func defaultTLS() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS12} }

// tlsConfigOf makes an endpoint's TLS material a configuration.
func tlsConfigOf(m *models.EndpointTLS) (*tls.Config, error) {
	cfg := defaultTLS()
	if m.ClientCertificate != "" {
		cert, err := tls.X509KeyPair([]byte(m.ClientCertificate), []byte(m.ClientKey))
		if err != nil {
			return nil, errors.New("the client certificate and key do not form a pair")
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if m.CACertificates != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(m.CACertificates)) {
			return nil, errors.New("the CA bundle holds no certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// lru is a bounded map of endpoint id to a value built for one
// configuration of it (key): a value built for another configuration is
// replaced. Safe for concurrent use.
type lru[V any] struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recently used
	items map[string]*list.Element
	// drop, when set, releases a value that leaves the cache.
	drop func(V)
}

type lruItem[V any] struct {
	id, key string
	v       V
}

func newLRU[V any](maxItems int, drop func(V)) *lru[V] {
	return &lru[V]{max: maxItems, order: list.New(), items: map[string]*list.Element{}, drop: drop}
}

// get returns the value of id for key, built by build when there is none
// (the lock is held meanwhile: building is local and quick).
func (c *lru[V]) get(id, key string, build func() (V, error)) (V, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		it := el.Value.(*lruItem[V])
		if it.key == key {
			c.order.MoveToFront(el)
			return it.v, nil
		}
		c.removeLocked(el)
	}
	v, err := build()
	if err != nil {
		return v, fmt.Errorf("endpoint %s: %w", id, err)
	}
	c.items[id] = c.order.PushFront(&lruItem[V]{id: id, key: key, v: v})
	for c.order.Len() > c.max {
		c.removeLocked(c.order.Back())
	}
	return v, nil
}

func (c *lru[V]) removeLocked(el *list.Element) {
	it := c.order.Remove(el).(*lruItem[V])
	delete(c.items, it.id)
	if c.drop != nil {
		c.drop(it.v)
	}
}

func closeIdle(c *http.Client) {
	if t, ok := c.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
}
