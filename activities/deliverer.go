// Package activities makes one outbound webhook delivery attempt, the
// Temporal activity that the delivery workflow retries, and holds the egress
// guard that keeps those requests off internal networks.
//
// Signatures (SPEC §6). Both schemes are HMAC-SHA256 keyed with the
// endpoint secret's UTF-8 bytes, "whsec_" prefix included:
//
//	X-Webhook-Signature: sha256=<hex of HMAC(body)>
//	Webhook-Signature:   v1,<base64 of HMAC("<id>.<timestamp>.<body>")>
//
// During a rotation grace Webhook-Signature carries two space-separated
// entries, current first, so a receiver holding either secret verifies;
// X-Webhook-Signature keeps a single value, the current secret's digest,
// because receivers of that GitHub-style header compare it whole. Standard
// Webhooks libraries must be given the raw secret bytes (Go:
// NewWebhookRaw([]byte(secret))), not the "whsec_" form they would
// base64-decode.
package activities

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/recordhub/recordhub/models"
)

// Store is what an attempt reads and writes; *models.Store satisfies it.
type Store interface {
	GetEndpoint(ctx context.Context, tenantID, id string) (*models.WebhookEndpoint, error)
	EndpointSecrets(e *models.WebhookEndpoint) (current, previous string, err error)
	GetEvent(ctx context.Context, tenantID, id string) (*models.Event, error)
	InsertDelivery(ctx context.Context, d *models.WebhookDelivery) error
}

// DefaultTimeout is the per-attempt timeout (RECORDHUB_WEBHOOK_TIMEOUT).
const DefaultTimeout = 30 * time.Second

// Config configures a Deliverer.
type Config struct {
	// Timeout bounds one attempt, from DNS to the response's first 4 KiB
	// (RECORDHUB_WEBHOOK_TIMEOUT); zero means DefaultTimeout. The
	// activity's StartToCloseTimeout should leave room beyond it for the
	// row to be written.
	Timeout time.Duration
	// AllowCIDRs are exempted from the block list
	// (RECORDHUB_WEBHOOK_ALLOW_CIDRS, see ParseAllowCIDRs); the only
	// exemption there is.
	AllowCIDRs []netip.Prefix
	// Version goes into User-Agent: recordhub-webhooks/<version>; empty
	// means "dev".
	Version string
	// Now is the clock of timestamps and rows; nil means time.Now.
	Now func() time.Time
	// Metrics, when set, counts attempts.
	Metrics *Metrics
	// Resolver resolves receivers' names when dialling; nil means
	// net.DefaultResolver.
	Resolver *net.Resolver
}

// Deliverer makes delivery attempts. Register it with the Temporal worker;
// its only exported method is the Attempt activity, so registering the
// struct registers nothing else. It is safe for concurrent use, and keeps
// connections to receivers open between attempts.
type Deliverer struct {
	store     Store
	client    *http.Client
	transport *http.Transport
	egress    *egress
	timeout   time.Duration
	userAgent string
	now       func() time.Time
	metrics   *Metrics
}

// NewDeliverer returns a Deliverer that reads and writes through store.
func NewDeliverer(store Store, cfg Config) (*Deliverer, error) {
	if store == nil {
		return nil, errors.New("activities: a store is required")
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("activities: webhook timeout %s is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	for _, p := range cfg.AllowCIDRs {
		if !p.IsValid() {
			return nil, fmt.Errorf("activities: allowed network %v is not valid", p)
		}
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	eg := newEgress(cfg.AllowCIDRs)
	dialer := &net.Dialer{
		Timeout:   cfg.Timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  cfg.Resolver,
		Control:   eg.control,
	}
	transport := &http.Transport{
		// No proxy, ever: through one, the proxy's address is what is
		// dialled and checked, not the receiver's.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// Without Accept-Encoding the stored headers are exactly those
		// sent, and the stored body is what the receiver wrote.
		DisableCompression: true,
		TLSClientConfig:    &tls.Config{MinVersion: tls.VersionTLS12},
	}
	return &Deliverer{
		store: store,
		client: &http.Client{
			Transport: transport,
			// A 3xx is a failure (SPEC §6); following it could lead anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		transport: transport,
		egress:    eg,
		timeout:   cfg.Timeout,
		userAgent: "recordhub-webhooks/" + cfg.Version,
		now:       cfg.Now,
		metrics:   cfg.Metrics,
	}, nil
}

// AttemptInput names the delivery an attempt belongs to.
type AttemptInput struct {
	TenantID   string
	EventID    string
	EndpointID string
	// ReplayOf is the delivery id a replay was started from; "" otherwise.
	ReplayOf string
}

// AttemptOutput reports an attempt. A successful Attempt returns it; a
// failed one returns an error whose details hold it (see ErrTypeDeliveryFailed).
type AttemptOutput struct {
	// DeliveryID is the attempt's webhook_deliveries row.
	DeliveryID string
	Attempt    int
	// StatusCode is the receiver's HTTP status; 0 when there was none.
	StatusCode int
	// Error is the delivery error code; "" on success.
	Error string
}

// Attempt is the delivery activity: it sends the event to the endpoint once
// and writes one webhook_deliveries row, whatever happens. A 2xx returns
// nil. Other answers and network failures return a retryable
// ErrTypeDeliveryFailed error, so Temporal retries; a blocked destination
// and a deleted or disabled endpoint (or a vanished event) return
// non-retryable errors. When the row cannot be written, Attempt returns a
// retryable ErrTypeStore error even if the receiver accepted the event:
// every attempt must have its row, and receivers dedupe on X-Webhook-Id.
func (d *Deliverer) Attempt(ctx context.Context, in AttemptInput) (AttemptOutput, error) {
	info := attemptInfo(ctx)
	begin := time.Now()
	row := &models.WebhookDelivery{
		ID:       models.NewID(models.PrefixDelivery),
		TenantID: in.TenantID, EventID: in.EventID, EndpointID: in.EndpointID,
		WorkflowID: info.workflowID, RunID: info.runID, Attempt: info.attempt,
		RequestHeaders: models.Headers{}, ResponseHeaders: models.Headers{},
		StartedAt: d.now(),
	}
	if in.ReplayOf != "" {
		replayOf := in.ReplayOf
		row.ReplayOf = &replayOf
	}
	f := d.send(ctx, in, info.attempt, row)
	row.FinishedAt = d.now()
	row.DurationMS = ms(time.Since(begin))

	out := AttemptOutput{DeliveryID: row.ID, Attempt: row.Attempt, Error: row.Error}
	if row.ResponseStatus != nil {
		out.StatusCode = *row.ResponseStatus
	}
	outcome := outcomeSuccess
	if f != nil {
		outcome = f.code
	}
	d.metrics.observe(outcome, time.Since(begin))

	// The row is written even when the activity's context is done: its
	// deadline may be the very timeout that failed the attempt.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.store.InsertDelivery(wctx, row); err != nil {
		return out, temporal.NewApplicationErrorWithCause("record delivery attempt: "+err.Error(), ErrTypeStore, err, out)
	}
	switch {
	case f == nil:
		return out, nil
	case f.retry:
		return out, temporal.NewApplicationErrorWithCause(f.message, f.errType, f.cause, out)
	default:
		return out, temporal.NewNonRetryableApplicationError(f.message, f.errType, f.cause, out)
	}
}

// send makes the attempt and fills row with what was sent and received.
// It returns nil on success, else what went wrong, also written into row.
func (d *Deliverer) send(ctx context.Context, in AttemptInput, attempt int, row *models.WebhookDelivery) (f *failure) {
	var (
		tr       timing
		timedOut bool
		err      error
	)
	defer func() {
		row.Succeeded = err == nil
		if err != nil {
			c := classify(err, d.timeout, timedOut, tr.handshakeFailed())
			row.Error, row.ErrorMessage = c.code, storable(c.message, maxMessage)
			f = &c
		}
	}()

	ev, err := d.store.GetEvent(ctx, in.TenantID, in.EventID)
	if errors.Is(err, models.ErrNotFound) {
		err = errEventGone
		return
	}
	if err != nil {
		err = &internalError{"load the event", err}
		return
	}
	row.EventType = ev.Type
	ep, err := d.store.GetEndpoint(ctx, in.TenantID, in.EndpointID)
	if errors.Is(err, models.ErrNotFound) {
		err = errEndpointGone
		return
	}
	if err != nil {
		err = &internalError{"load the endpoint", err}
		return
	}
	row.RequestURL = ep.URL
	if !ep.Enabled {
		err = errEndpointDisabled
		return
	}
	current, previous, err := d.store.EndpointSecrets(ep)
	if err != nil {
		err = &internalError{"open the endpoint's secret", err}
		return
	}

	// The URL was checked at subscription time; the rules that need no DNS
	// run again (they may have changed since), and the dialer checks every
	// address. A refused attempt's row still shows what would have been sent.
	_, blocked := d.egress.checkStatic(ep.URL)
	// The body is the stored payload, byte for byte: the signatures cover
	// exactly these bytes, and the row keeps them so they can be checked again.
	body := []byte(ev.Payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		err = asBlocked(blocked, err)
		return
	}
	setHeaders(req.Header, signedMessage{
		EventID: ev.ID, EventType: ev.Type, Attempt: attempt, Timestamp: d.now().Unix(),
		Body: body, UserAgent: d.userAgent,
	}, current, previous)
	row.RequestHeaders = sentHeaders(req)
	row.RequestBody = ev.Payload
	if blocked != nil {
		err = asBlocked(blocked, nil)
		return
	}

	reqCtx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	defer tr.fill(row)
	resp, err := d.client.Do(req.WithContext(httptrace.WithClientTrace(reqCtx, tr.trace())))
	if err != nil {
		timedOut = errors.Is(reqCtx.Err(), context.DeadlineExceeded)
		return
	}
	defer resp.Body.Close()
	row.ResponseStatus = &resp.StatusCode
	row.ResponseHeaders = models.Headers(resp.Header.Clone())
	// The status decides; a body cut short by the deadline is kept as read.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, models.MaxResponseBody))
	row.ResponseBody = storable(string(head), models.MaxResponseBody)
	// A little more is drained so the connection can be reused; a receiver
	// that sends more than that loses its connection instead.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err = &statusError{resp.StatusCode}
	}
	return
}

// asBlocked makes a refused URL a blocked destination.
func asBlocked(err, fallback error) error {
	if err == nil {
		err = fallback
	}
	var b *blockedError
	if errors.As(err, &b) {
		return err
	}
	return &blockedError{reason: err.Error(), err: err}
}

// sentHeaders returns the request's headers as the transport writes them:
// its own, Host and Content-Length (the transport adds no others, since
// compression is off).
func sentHeaders(req *http.Request) models.Headers {
	h := models.Headers(req.Header.Clone())
	h["Host"] = []string{req.URL.Host}
	h["Content-Length"] = []string{strconv.FormatInt(req.ContentLength, 10)}
	return h
}

type activityInfo struct {
	attempt           int
	workflowID, runID string
}

// attemptInfo reads the activity's attempt number and workflow execution;
// outside an activity (a plain unit test) it is attempt 1 of no workflow.
func attemptInfo(ctx context.Context) activityInfo {
	if !activity.IsActivity(ctx) {
		return activityInfo{attempt: 1}
	}
	info := activity.GetInfo(ctx)
	return activityInfo{
		attempt:    max(1, int(info.Attempt)),
		workflowID: info.WorkflowExecution.ID,
		runID:      info.WorkflowExecution.RunID,
	}
}
