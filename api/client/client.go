package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds each request of a Client built without
// WithHTTPClient or WithTimeout.
const DefaultTimeout = 30 * time.Second

// maxAnswer bounds the answer body the client reads.
const maxAnswer = 16 << 20

// Client calls the API with one key. It is safe for concurrent use.
type Client struct {
	base string // without a trailing slash
	key  string
	http *http.Client
	// retries is how many times a request is sent again (WithRetries);
	// maxWait caps one wait before it (WithMaxRetryWait).
	retries int
	maxWait time.Duration
	// idempotencyKeys: every POST and PATCH carries a generated
	// Idempotency-Key (WithIdempotencyKeys).
	idempotencyKeys bool
}

// Option sets up a Client built by New.
type Option func(*Client)

// WithHTTPClient sends the requests through hc, with its timeout and
// transport.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithTimeout bounds each request to d (DefaultTimeout otherwise).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) { c.http = &http.Client{Timeout: d} }
}

// New returns a client of the API at baseURL (scheme and host, and a path
// prefix if the API is served under one) that authenticates with key.
func New(baseURL, key string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), key: key, maxWait: DefaultMaxRetryWait}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: DefaultTimeout}
	}
	return c
}

// WithKey returns a client of the same API, through the same HTTP client
// and with the same options, that authenticates with key: an admin creates
// a key, then acts with it.
func (c *Client) WithKey(key string) *Client {
	cc := *c
	cc.key = key
	return &cc
}

// BaseURL is the API's base URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// URL is the absolute URL of path, as the client requests it.
func (c *Client) URL(path string) string { return c.base + path }

// request is one call of the API: its method, path (with its query), JSON
// body (none when nil) and headers of its own.
type request struct {
	method, path string
	in           any
	header       http.Header
}

// answer is a 2xx answer: its body as sent, and its headers.
type answer struct {
	body   json.RawMessage
	header http.Header
}

// do sends one request with in as its JSON body (none when nil) and decodes
// a 2xx answer into out (unless nil). It returns the answer's body as sent.
func (c *Client) do(ctx context.Context, method, path string, in, out any) (json.RawMessage, error) {
	a, err := c.call(ctx, request{method: method, path: path, in: in}, out)
	if err != nil {
		return nil, err
	}
	return a.body, nil
}

// call sends r, and sends it again as the client's retries allow (see
// retry.go), and decodes a 2xx answer into out (unless nil).
func (c *Client) call(ctx context.Context, r request, out any) (*answer, error) {
	target := c.URL(r.path)
	var body []byte
	if r.in != nil {
		b, err := json.Marshal(r.in)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode request: %w", r.method, target, err)
		}
		body = b
	}
	idemKey := c.idempotencyKey(ctx, r.method)
	var (
		a   *answer
		err error
	)
	for try := 0; ; try++ {
		a, err = c.send(ctx, r, target, body, idemKey)
		wait, again := c.retryAfter(ctx, r.method, idemKey, try, err)
		if !again {
			break
		}
		if serr := sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("%s %s: wait before retry: %w (last error: %w)", r.method, target, serr, err)
		}
	}
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(a.body, out); err != nil {
			return nil, fmt.Errorf("%s %s: decode answer: %w", r.method, target, err)
		}
	}
	return a, nil
}

// send makes one try of r.
func (c *Client) send(ctx context.Context, r request, target string, body []byte, idemKey string) (*answer, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, target, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set(IdempotencyKeyHeader, idemKey)
	}
	for name, values := range r.header {
		req.Header[name] = values
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, &TransportError{Method: r.method, URL: target, Err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return nil, &TransportError{Method: r.method, URL: target, Err: fmt.Errorf("read answer: %w", err)}
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, newError(res, b, time.Now())
	}
	return &answer{body: b, header: res.Header}, nil
}

// escape is url.PathEscape, short for the routes.
func escape(s string) string { return url.PathEscape(s) }

// withQuery is path with q as its query, if q has any.
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
