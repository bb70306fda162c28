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
	c := &Client{base: strings.TrimRight(baseURL, "/"), key: key}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: DefaultTimeout}
	}
	return c
}

// WithKey returns a client of the same API, through the same HTTP client,
// that authenticates with key: an admin creates a key, then acts with it.
func (c *Client) WithKey(key string) *Client {
	cc := *c
	cc.key = key
	return &cc
}

// BaseURL is the API's base URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// URL is the absolute URL of path, as the client requests it.
func (c *Client) URL(path string) string { return c.base + path }

// do sends one request with in as its JSON body (none when nil) and decodes
// a 2xx answer into out (unless nil). It returns the answer's body as sent.
func (c *Client) do(ctx context.Context, method, path string, in, out any) (json.RawMessage, error) {
	target := c.URL(path)
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode request: %w", method, target, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, &TransportError{Method: method, URL: target, Err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return nil, &TransportError{Method: method, URL: target, Err: fmt.Errorf("read answer: %w", err)}
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, newError(res, b, time.Now())
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("%s %s: decode answer: %w", method, target, err)
		}
	}
	return b, nil
}

// escape is url.PathEscape, short for the routes.
func escape(s string) string { return url.PathEscape(s) }
