package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// The webhooks commands recover, resync and update are clients of the HTTP
// API, not of the database or Temporal: they work the same against `make
// run` and a production deployment, and go through keys, limits and
// access logs.

// adminKeyEnv holds the admin key: an environment variable, never a flag,
// so that it does not show in ps.
const adminKeyEnv = "RECORDHUB_ADMIN_KEY"

// apiFlagHelp is the help of the --api flag of every API command.
const apiFlagHelp = "base URL of the API (default: $RECORDHUB_API_URL, else http:// and $RECORDHUB_HTTP_ADDR, else http://127.0.0.1:8080)"

// newAdminClient is the API client of the commands that act as an admin,
// with the key from RECORDHUB_ADMIN_KEY.
func newAdminClient(api string, lookupEnv func(string) (string, bool)) (*client.Client, error) {
	key, _ := lookupEnv(adminKeyEnv)
	if key = strings.TrimSpace(key); key == "" {
		return nil, fmt.Errorf("%s is not set: export an admin key of the endpoint's tenant (it is never taken as a flag, so it stays out of ps)", adminKeyEnv)
	}
	return client.New(api, key, client.WithTimeout(recoverTiming.requestTimeout)), nil
}

// recoverTiming paces the API commands; tests shorten it, or note the
// waits it asks for instead of waiting.
var recoverTiming = struct {
	poll           time.Duration // between two status requests
	backoff        time.Duration // after the first network error, doubled for each next one
	maxRetryAfter  time.Duration // the longest Retry-After of a 429 that is waited for
	requestTimeout time.Duration
	// sleep waits d or until ctx is done; every wait of the commands goes
	// through it.
	sleep func(ctx context.Context, d time.Duration) error
}{poll: time.Second, backoff: time.Second, maxRetryAfter: 30 * time.Second, requestTimeout: 30 * time.Second, sleep: sleep}

const (
	// pollAttempts bounds the tries of one status request that meets
	// network errors, 502-504 or 429s.
	pollAttempts = 5
	// startAttempts bounds the tries of a start request, which only a 429
	// repeats: after a network error the job may have started.
	startAttempts = 3
)

// apiBase is the API's base URL: the flag, else RECORDHUB_API_URL, else the
// address a local serve listens on.
func apiBase(flagValue string, lookupEnv func(string) (string, bool)) (string, error) {
	base := flagValue
	if base == "" {
		base, _ = lookupEnv("RECORDHUB_API_URL")
	}
	if base == "" {
		addr, _ := lookupEnv("RECORDHUB_HTTP_ADDR")
		base = "http://" + dialable(addr)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("API URL %q: want http:// or https:// and a host", base)
	}
	return strings.TrimRight(base, "/"), nil
}

// dialable turns a listen address into one to dial: a server listening on
// all interfaces (":8080", "0.0.0.0:8080") is reached on loopback.
func dialable(listen string) string {
	if listen == "" {
		return "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// callAPI makes one API request through f up to attempts times: again after
// a 429 (waiting its Retry-After, bounded) and, when idempotent, after
// transient errors (with a doubling backoff). A refused key's error says
// where the key comes from.
func callAPI[T any](ctx context.Context, attempts int, idempotent bool, f func(context.Context) (T, error)) (T, error) {
	v, err := retry(ctx, attempts, idempotent, f)
	var ae *client.Error
	if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
		err = &keyRefused{err: ae}
	}
	return v, err
}

func retry[T any](ctx context.Context, attempts int, idempotent bool, f func(context.Context) (T, error)) (T, error) {
	backoff := recoverTiming.backoff
	var (
		v   T
		err error
	)
	for i := range attempts {
		if v, err = f(ctx); err == nil || ctx.Err() != nil || i == attempts-1 {
			return v, err
		}
		var wait time.Duration
		var ae *client.Error
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
			wait = min(cmp.Or(ae.RetryAfter, recoverTiming.backoff), recoverTiming.maxRetryAfter)
		case idempotent && client.Transient(err):
			wait, backoff = backoff, 2*backoff
		default:
			return v, err
		}
		if serr := recoverTiming.sleep(ctx, wait); serr != nil {
			return v, serr
		}
	}
	return v, err
}

// keyRefused is a 401 or 403 of the API, with where the key comes from.
type keyRefused struct{ err *client.Error }

func (e *keyRefused) Error() string {
	s := fmt.Sprintf("%s (%s must hold an admin key of the endpoint's tenant)", e.err.Summary(), adminKeyEnv)
	if e.err.RequestID != "" {
		s += fmt.Sprintf(" (request %s)", e.err.RequestID)
	}
	return s
}

func (e *keyRefused) Unwrap() error { return e.err }

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// job is a recovery or a resync the command started: what it prints about
// it and where its status is.
type job struct {
	kind       string // "recovery", "resync"
	id         string
	workflowID string
	statusURL  string
}

// follow polls a job's status with status until it is no longer running,
// showing line(status) as its progress on p; it returns the last status,
// or an error that says where the job's status is.
func follow[T any](ctx context.Context, j job, p *progress, status func(context.Context) (T, error), line func(T) (string, bool)) (T, error) {
	st, err := func() (T, error) {
		defer p.end()
		for {
			st, err := callAPI(ctx, pollAttempts, true, status)
			if err != nil {
				return st, err
			}
			l, running := line(st)
			p.show(l)
			if !running {
				return st, nil
			}
			if err := recoverTiming.sleep(ctx, recoverTiming.poll); err != nil {
				return st, err
			}
		}
	}()
	if err != nil {
		if ctx.Err() != nil {
			return st, fmt.Errorf("stopped waiting (%w): %s %s goes on in the background as Temporal workflow %s; its status is at %s", ctx.Err(), j.kind, j.id, j.workflowID, j.statusURL)
		}
		return st, fmt.Errorf("%s %s: %w (its status is at %s)", j.kind, j.id, err, j.statusURL)
	}
	return st, nil
}

// writeRaw writes an answer as the API sent it, on a line of its own.
func writeRaw(w io.Writer, raw []byte) error {
	if _, err := w.Write(append(raw, '\n')); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

// reason is a failed job's error, or says it gave none.
func reason(msg *string) string {
	if msg == nil {
		return "no reason given"
	}
	return *msg
}

// progress shows one line that changes: rewritten in place on a terminal,
// a line per change elsewhere (logs, pipes).
type progress struct {
	w        io.Writer
	terminal bool
	last     string
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, terminal: isTerminal(w)}
}

func (p *progress) show(line string) {
	if line == p.last {
		return
	}
	if !p.terminal {
		fmt.Fprintln(p.w, line)
		p.last = line
		return
	}
	// Pad over the rest of a longer previous line.
	pad := max(0, len(p.last)-len(line))
	fmt.Fprint(p.w, "\r"+line+strings.Repeat(" ", pad))
	p.last = line
}

// end finishes the line a terminal was rewriting.
func (p *progress) end() {
	if p.terminal && p.last != "" {
		fmt.Fprintln(p.w)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
