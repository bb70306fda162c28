package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/recordhub/recordhub/activities"
)

// The recover command is a client of the HTTP API, not of the
// database or Temporal: it works the same against `make run` and a
// production deployment, and goes through keys, limits and access logs.

const (
	webhooksUsage = "usage: recordhub webhooks recover ENDPOINT_ID --since 2h|RFC3339 [--until 30m|RFC3339] [--api URL] [--detach] [--json]  (the admin key is read from RECORDHUB_ADMIN_KEY)"

	// adminKeyEnv holds the admin key: an environment variable, never a
	// flag, so that it does not show in ps.
	adminKeyEnv = "RECORDHUB_ADMIN_KEY"
)

// newAdminClient is the API client of the commands that act as an admin
// (recover, resync, update), with the key from RECORDHUB_ADMIN_KEY: never
// a flag, so that it stays out of ps.
func newAdminClient(api string, lookupEnv func(string) (string, bool)) (*recoveryClient, error) {
	key, _ := lookupEnv(adminKeyEnv)
	if key = strings.TrimSpace(key); key == "" {
		return nil, fmt.Errorf("%s is not set: export an admin key of the endpoint's tenant (it is never taken as a flag, so it stays out of ps)", adminKeyEnv)
	}
	return &recoveryClient{base: api, key: key, http: &http.Client{Timeout: recoverTiming.requestTimeout}}, nil
}

// recoverTiming paces the recover command; tests shorten it, or note the
// waits it asks for instead of waiting.
var recoverTiming = struct {
	poll           time.Duration // between two status requests
	backoff        time.Duration // after the first network error, doubled for each next one
	maxRetryAfter  time.Duration // the longest Retry-After of a 429 that is waited for
	requestTimeout time.Duration
	// sleep waits d or until ctx is done; every wait of the command goes
	// through it.
	sleep func(ctx context.Context, d time.Duration) error
}{poll: time.Second, backoff: time.Second, maxRetryAfter: 30 * time.Second, requestTimeout: 30 * time.Second, sleep: sleep}

const (
	// pollAttempts bounds the tries of one status request that meets
	// network errors, 502-504 or 429s.
	pollAttempts = 5
	// startAttempts bounds the tries of the start request, which only a
	// 429 repeats: after a network error the recovery may have started.
	startAttempts = 3
)

// recoverOptions is a parsed `webhooks recover` command line.
type recoverOptions struct {
	endpointID string
	since      time.Time
	until      *time.Time
	api        string
	detach     bool
	asJSON     bool
}

// webhooksCommand runs `recordhub webhooks …`; it needs no server
// configuration: recover needs only the API's address and an admin key,
// listen nothing at all.
func webhooksCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "help" || isHelpArg(args[0])) {
		fmt.Fprint(stdout, webhooksHelp)
		return errHelpShown
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, webhooksUsage)
		fmt.Fprintln(stderr, resyncUsage)
		fmt.Fprintln(stderr, updateUsage)
		fmt.Fprintln(stderr, listenUsage)
		return errors.New("no webhooks command given")
	}
	switch args[0] {
	case "recover":
	case "listen":
		return listenCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "resync":
		return resyncCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "update":
		return updateCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	default:
		fmt.Fprintln(stderr, webhooksUsage)
		fmt.Fprintln(stderr, resyncUsage)
		fmt.Fprintln(stderr, updateUsage)
		fmt.Fprintln(stderr, listenUsage)
		return fmt.Errorf("unknown webhooks command %q", args[0])
	}
	opts, err := parseRecoverArgs(args[1:], lookupEnv, time.Now(), stdout, stderr)
	if err != nil {
		return err
	}
	c, err := newAdminClient(opts.api, lookupEnv)
	if err != nil {
		return err
	}
	return recoverEndpoint(ctx, c, opts, stdout, stderr)
}

// parseRecoverArgs parses the flags and the endpoint id, in any order: the
// flag package alone stops at the first argument that is not a flag.
func parseRecoverArgs(args []string, lookupEnv func(string) (string, bool), now time.Time, stdout, stderr io.Writer) (recoverOptions, error) {
	var (
		opts         recoverOptions
		since, until string
	)
	fs := flag.NewFlagSet("webhooks recover", flag.ContinueOnError)
	fs.StringVar(&since, "since", "", "start of the window: a duration ago (2h, 90m) or an RFC 3339 date-time (required)")
	fs.StringVar(&until, "until", "", "end of the window, in the same forms (default: now)")
	fs.StringVar(&opts.api, "api", "", "base URL of the API (default: $RECORDHUB_API_URL, else http:// and $RECORDHUB_HTTP_ADDR, else http://127.0.0.1:8080)")
	fs.BoolVar(&opts.detach, "detach", false, "print the recovery's ids and return without waiting")
	fs.BoolVar(&opts.asJSON, "json", false, "print the final status object as JSON")
	positional, err := parseArgs(fs, webhooksUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 1 || positional[0] == "" {
		return opts, errors.New(webhooksUsage)
	}
	opts.endpointID = positional[0]
	if since == "" {
		return opts, fmt.Errorf("--since is required: %s", webhooksUsage)
	}
	t, err := parseWhen(since, now)
	if err != nil {
		return opts, fmt.Errorf("--since: %w", err)
	}
	opts.since = t
	if until != "" {
		t, err := parseWhen(until, now)
		if err != nil {
			return opts, fmt.Errorf("--until: %w", err)
		}
		if !opts.since.Before(t) {
			return opts, errors.New("--until must be after --since")
		}
		opts.until = &t
	}
	if opts.api, err = apiBase(opts.api, lookupEnv); err != nil {
		return opts, err
	}
	return opts, nil
}

// parseWhen reads "that long ago" (a Go duration) or an RFC 3339 date-time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q: a duration must be positive (it means that long ago)", s)
		}
		return now.Add(-d).UTC().Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (2h, 90m) nor an RFC 3339 date-time", s)
	}
	return t, nil
}

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

// recoverEndpoint starts a recovery and, unless detached, follows it to its
// end.
func recoverEndpoint(ctx context.Context, c *recoveryClient, opts recoverOptions, stdout, stderr io.Writer) error {
	started, err := c.start(ctx, opts.endpointID, opts.since, opts.until)
	if err != nil {
		return fmt.Errorf("recover %s: %w", opts.endpointID, err)
	}
	statusURL := c.statusURL(opts.endpointID, started.RecoveryID)
	if opts.detach {
		if opts.asJSON {
			return json.NewEncoder(stdout).Encode(started)
		}
		fmt.Fprintf(stdout, "recovery %s started (workflow %s)\nstatus: %s\n", started.RecoveryID, started.WorkflowID, statusURL)
		return nil
	}
	// With --json, stdout holds the final object only.
	info := stdout
	if opts.asJSON {
		info = stderr
	}
	fmt.Fprintf(info, "recovery %s started (workflow %s)\n", started.RecoveryID, started.WorkflowID)

	st, err := follow(ctx, c, opts.endpointID, started.RecoveryID, newProgress(stderr))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped waiting (%w): recovery %s goes on in the background as Temporal workflow %s; its status is at %s", ctx.Err(), started.RecoveryID, started.WorkflowID, statusURL)
		}
		return fmt.Errorf("recovery %s: %w (its status is at %s)", started.RecoveryID, err, statusURL)
	}
	if opts.asJSON {
		if _, err := stdout.Write(append(st.raw, '\n')); err != nil {
			return fmt.Errorf("write status: %w", err)
		}
	}
	if st.Status == "failed" {
		msg := "no reason given"
		if st.Error != nil {
			msg = *st.Error
		}
		return fmt.Errorf("recovery %s failed: %s (found %d, replayed %d, failed %d)", st.ID, msg, st.Found, st.Replayed, st.Failed)
	}
	if !opts.asJSON {
		fmt.Fprintf(stdout, "recovery %s completed: found %d, replayed %d, failed %d\n", st.ID, st.Found, st.Replayed, st.Failed)
		if st.Capped && st.NextSince != nil {
			fmt.Fprintf(stdout, "recovery %s was capped: events of its window are left; continue with --since %s --until %s\n", st.ID, *st.NextSince, st.Until)
		}
	}
	return nil
}

// follow polls a recovery's status until it is no longer running, showing
// its progress.
func follow(ctx context.Context, c *recoveryClient, endpointID, recoveryID string, p *progress) (*recoveryStatus, error) {
	defer p.end()
	for {
		st, err := c.status(ctx, endpointID, recoveryID)
		if err != nil {
			return nil, err
		}
		p.show(fmt.Sprintf("recovering %s: found %d, replayed %d, failed %d (%s)", endpointID, st.Found, st.Replayed, st.Failed, st.Status))
		if st.Status != "running" {
			return st, nil
		}
		if err := recoverTiming.sleep(ctx, recoverTiming.poll); err != nil {
			return nil, err
		}
	}
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

// recoveryClient calls the admin recovery routes with an admin key.
type recoveryClient struct {
	base string // the API's base URL, without a trailing slash
	key  string
	http *http.Client
}

// recoveryStarted is the 202 answer of the start route.
type recoveryStarted struct {
	RecoveryID string `json:"recovery_id"`
	WorkflowID string `json:"workflow_id"`
}

// recoveryStatus is the answer of the status route; raw is that answer as
// sent.
type recoveryStatus struct {
	ID       string  `json:"id"`
	Status   string  `json:"status"`
	Found    int     `json:"found"`
	Replayed int     `json:"replayed"`
	Failed   int     `json:"failed"`
	Error    *string `json:"error"`
	Until    string  `json:"until"`
	// Capped: the recovery stopped at its cap with events of its window
	// left; the next one starts at NextSince, with the same until.
	Capped    bool    `json:"capped"`
	NextSince *string `json:"next_since"`
	raw       json.RawMessage
}

func (c *recoveryClient) endpointPath(endpointID string) string {
	return "/api/admin/webhook-endpoints/" + url.PathEscape(endpointID)
}

func (c *recoveryClient) statusURL(endpointID, recoveryID string) string {
	return c.base + c.endpointPath(endpointID) + "/recoveries/" + url.PathEscape(recoveryID)
}

// start asks for a recovery of the window. Only a 429 is retried: after a
// network error the first request may have started one.
func (c *recoveryClient) start(ctx context.Context, endpointID string, since time.Time, until *time.Time) (*recoveryStarted, error) {
	body := map[string]string{"since": since.Format(time.RFC3339Nano)}
	if until != nil {
		body["until"] = until.Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	var out recoveryStarted
	err = retry(ctx, startAttempts, false, func() error {
		_, err := c.do(ctx, http.MethodPost, c.base+c.endpointPath(endpointID)+"/recover", b, &out)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out.RecoveryID == "" {
		return nil, errors.New("the API answered without a recovery_id")
	}
	return &out, nil
}

// status reads a recovery's status, riding out short network trouble.
func (c *recoveryClient) status(ctx context.Context, endpointID, recoveryID string) (*recoveryStatus, error) {
	var st recoveryStatus
	err := retry(ctx, pollAttempts, true, func() error {
		raw, err := c.do(ctx, http.MethodGet, c.statusURL(endpointID, recoveryID), nil, &st)
		st.raw = raw
		return err
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// do sends one request and decodes a 2xx answer into out; it returns the
// answer's body, or an *apiError or *transportError.
func (c *recoveryClient) do(ctx context.Context, method, target string, body []byte, out any) (json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, &transportError{err: fmt.Errorf("%s %s: %w", method, target, err)}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, &transportError{err: fmt.Errorf("%s %s: read answer: %w", method, target, err)}
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, newAPIError(res, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("%s %s: decode answer: %w", method, target, err)
	}
	return b, nil
}

// transportError is a request that got no answer.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// apiError is an error answer of the API.
type apiError struct {
	status     int
	retryAfter time.Duration // of a 429; 0 when not said
	Code       string        `json:"error"`
	Message    string        `json:"message"`
	RequestID  string        `json:"request_id"`
	Details    []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"details"`
}

func newAPIError(res *http.Response, body []byte) *apiError {
	e := &apiError{status: res.StatusCode}
	if json.Unmarshal(body, e) != nil || e.Code == "" {
		// Not the API's own answer: a proxy's, say.
		e.Code, e.Message = fmt.Sprintf("HTTP %d", res.StatusCode), http.StatusText(res.StatusCode)
	}
	if res.StatusCode == http.StatusTooManyRequests {
		e.retryAfter, _ = activities.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
	}
	return e
}

func (e *apiError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Code, e.Message)
	for _, d := range e.Details {
		fmt.Fprintf(&b, "; %s: %s", d.Field, d.Message)
	}
	if e.status == http.StatusUnauthorized || e.status == http.StatusForbidden {
		fmt.Fprintf(&b, " (%s must hold an admin key of the endpoint's tenant)", adminKeyEnv)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	return b.String()
}

// transient reports whether a status request that failed with err may
// succeed when repeated.
func transient(err error) bool {
	var te *transportError
	var ae *apiError
	switch {
	case errors.As(err, &te):
		return true
	case errors.As(err, &ae):
		return ae.status == http.StatusBadGateway || ae.status == http.StatusServiceUnavailable || ae.status == http.StatusGatewayTimeout
	}
	return false
}

// retry calls f up to attempts times: again after a 429 (waiting its
// Retry-After, bounded) and, when idempotent, after transient errors (with
// a doubling backoff).
func retry(ctx context.Context, attempts int, idempotent bool, f func() error) error {
	backoff := recoverTiming.backoff
	var err error
	for i := range attempts {
		if err = f(); err == nil || ctx.Err() != nil || i == attempts-1 {
			return err
		}
		var wait time.Duration
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.status == http.StatusTooManyRequests:
			wait = min(cmp.Or(ae.retryAfter, recoverTiming.backoff), recoverTiming.maxRetryAfter)
		case idempotent && transient(err):
			wait, backoff = backoff, 2*backoff
		default:
			return err
		}
		if serr := recoverTiming.sleep(ctx, wait); serr != nil {
			return serr
		}
	}
	return err
}

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
