package activities

// The package's test helpers: what more than one of its test files uses.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
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

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// jsonLogger logs every level as JSON lines to w, as serve does.
func jsonLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// logLines decodes a JSON log, one object a line.
func logLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

var loopback = prefixes("127.0.0.0/8", "::1/128")

// testNow is the Deliverer's clock in tests: timestamps can be compared.
var testNow = time.Unix(1_700_000_000, 0).UTC()

func fixedNow() time.Time { return testNow }

// fixture is a tenant with a module, an endpoint and one event to deliver.
type fixture struct {
	store    *models.Store
	tenantID string
	endpoint *models.WebhookEndpoint
	secret   string
	event    models.Event
}

func newFixture(t *testing.T, s *models.Store, endpointURL string) *fixture {
	t.Helper()
	ctx := t.Context()
	tenant, _, _, err := s.CreateTenant(ctx, "acme", 600)
	if err != nil {
		t.Fatalf("create tenant: %v", err)
	}
	m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{
		Slug: ptr("contacts"), Name: ptr("Contacts"),
		Fields: &[]models.Field{{Name: "name", Type: models.TypeString, Required: true}},
	})
	if err != nil {
		t.Fatalf("create module: %v", err)
	}
	// The URL is checked by the tests themselves; the store takes any.
	ep, secret, err := s.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{
		URL: &endpointURL, Events: &[]string{models.EventRecordCreated},
	}, func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	// Non-ASCII and HTML-ish text: the body must arrive byte for byte.
	if _, err := s.CreateRecord(ctx, m, map[string]any{"name": "Ada Lovelace — «engine» <&>"}, map[string]any{"note": "héllo"}); err != nil {
		t.Fatalf("create record: %v", err)
	}
	events, err := s.PendingEvents(ctx, 10)
	if err != nil {
		t.Fatalf("pending events: %v", err)
	}
	if len(events) != 1 {
		t.Fatalf("got %d pending events, want 1", len(events))
	}
	return &fixture{store: s, tenantID: tenant.ID, endpoint: ep, secret: secret, event: events[0]}
}

func (f *fixture) input() AttemptInput {
	return AttemptInput{TenantID: f.tenantID, EventID: f.event.ID, EndpointID: f.endpoint.ID}
}

// rows returns the tenant's delivery rows, oldest first.
func (f *fixture) rows(t *testing.T) []models.WebhookDelivery {
	t.Helper()
	rows, _, err := f.store.ListDeliveries(t.Context(), f.tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 100}})
	if err != nil {
		t.Fatalf("list deliveries: %v", err)
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows
}

// onlyRow returns the one delivery row the test expects.
func (f *fixture) onlyRow(t *testing.T) models.WebhookDelivery {
	t.Helper()
	rows := f.rows(t)
	if len(rows) != 1 {
		t.Fatalf("got %d delivery rows, want exactly 1: %+v", len(rows), rows)
	}
	return rows[0]
}

func newDeliverer(t *testing.T, s Store, cfg Config) *Deliverer {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = fixedNow
	}
	if cfg.Version == "" {
		cfg.Version = "1.2.3"
	}
	d, err := NewDeliverer(s, cfg)
	if err != nil {
		t.Fatalf("NewDeliverer: %v", err)
	}
	t.Cleanup(d.transport.CloseIdleConnections)
	return d
}

// receiver is a webhook receiver that keeps what it was sent.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []received
}

type received struct {
	header http.Header
	host   string
	body   []byte
}

// newReceiver starts a receiver; handle answers after the request was kept.
func newReceiver(t *testing.T, handle http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewServer(r.wrap(handle))
	t.Cleanup(r.Close)
	return r
}

func newTLSReceiver(t *testing.T, handle http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewUnstartedServer(r.wrap(handle))
	r.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	r.StartTLS()
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) wrap(handle http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), host: req.Host, body: body})
		r.mu.Unlock()
		if handle != nil {
			handle(w, req)
		}
	}
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// verifyHex checks X-Webhook-Signature as a receiver does: recompute over
// the raw body, compare in constant time.
func verifyHex(header string, body []byte, secret string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal([]byte(got), []byte(hex.EncodeToString(mac.Sum(nil))))
}

// verifyStandard checks the Standard Webhooks signature as a receiver does,
// with the Go library given the secret as recordhub answers it; the
// timestamp is not checked, the tests' clock being fixed in the past.
func verifyStandard(h http.Header, body []byte, secret string) bool {
	wh, err := standardwebhooks.NewWebhook(secret)
	return err == nil && wh.VerifyIgnoringTimestamp(body, h) == nil
}

// health is the part of an endpoint the tests compare.
type health struct {
	Enabled             bool
	ConsecutiveFailures int
	FirstFailure        bool
	LastSuccessAt       *time.Time
	LastFailureAt       *time.Time
	DisabledAt          *time.Time
	DisabledReason      *string
}

func endpointHealth(t *testing.T, f *fixture) health {
	t.Helper()
	ep, err := f.store.GetEndpoint(t.Context(), f.tenantID, f.endpoint.ID)
	if err != nil {
		t.Fatal(err)
	}
	utc := func(p *time.Time) *time.Time {
		if p == nil {
			return nil
		}
		v := p.UTC()
		return &v
	}
	return health{ep.Enabled, ep.ConsecutiveFailures, ep.FirstFailureAt != nil, utc(ep.LastSuccessAt), utc(ep.LastFailureAt), utc(ep.DisabledAt), ep.DisabledReason}
}

func forDialects(t *testing.T, fn func(t *testing.T, d models.Dialect)) {
	t.Helper()
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		t.Run(string(d), func(t *testing.T) { fn(t, d) })
	}
}

// finishFailsOnce loses the first outcome written, as a worker killed
// mid-request does.
type finishFailsOnce struct {
	*models.Store
	failed atomic.Bool
}

func (s *finishFailsOnce) FinishAttempt(ctx context.Context, d *models.WebhookDelivery) error {
	if s.failed.CompareAndSwap(false, true) {
		return errDiskFull
	}
	return s.Store.FinishAttempt(ctx, d)
}

func (s *finishFailsOnce) FinishDelivery(ctx context.Context, d *models.WebhookDelivery, end models.DeliveryEnd) (error, error) {
	if s.failed.CompareAndSwap(false, true) {
		return nil, errDiskFull
	}
	return s.Store.FinishDelivery(ctx, d, end)
}

// nopStore is a Store for tests that never reach it.
type nopStore struct{}

func (nopStore) SnapshotSuperseded(context.Context, *models.Event, *models.WebhookEndpoint) (bool, error) {
	return false, nil
}

func (nopStore) GetEventAndEndpoint(context.Context, string, string, string) (*models.Event, *models.WebhookEndpoint, error) {
	return nil, nil, models.ErrNotFound
}

func (nopStore) EndpointSecrets(*models.WebhookEndpoint) (string, string, error) {
	return "", "", fmt.Errorf("no secrets")
}

func (nopStore) EndpointHeaders(*models.WebhookEndpoint) (map[string]string, error) {
	return nil, nil
}

func (nopStore) EndpointCredentials(*models.WebhookEndpoint) (*models.EndpointAuth, *models.EndpointTLS, error) {
	return nil, nil, nil
}

func (nopStore) EndpointURL(e *models.WebhookEndpoint) (string, error) { return e.URL, nil }

func (nopStore) InsertAttempt(context.Context, *models.WebhookDelivery) error { return nil }

func (nopStore) FinishAttempt(context.Context, *models.WebhookDelivery) error { return nil }

func (nopStore) FinishDelivery(context.Context, *models.WebhookDelivery, models.DeliveryEnd) (error, error) {
	return nil, nil
}

func (nopStore) NextAttempt(context.Context, string, string, string, string) (int, error) {
	return 1, nil
}

func (nopStore) SettleLostAttempts(context.Context, string, string, string, string, time.Time) (int64, error) {
	return 0, nil
}

func (nopStore) DisableEndpoint(context.Context, string, string) error { return nil }

func (nopStore) RecordDeliveryEnd(context.Context, string, string, bool, time.Time, time.Duration) error {
	return nil
}

func ptr[T any](v T) *T { return &v }

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// fakeReplays records the replays a page starts, and fails the ones
// listed in fail.
type fakeReplays struct {
	mu      sync.Mutex
	started map[string]string // workflow id → replay_of
	fail    map[string]error  // event id → error
}

func (f *fakeReplays) StartReplay(_ context.Context, ev *models.Event, _ *models.WebhookEndpoint, replayOf, workflowID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[ev.ID]; err != nil {
		return err
	}
	if _, ok := f.started[workflowID]; ok {
		return nil // already started: counts as started
	}
	f.started[workflowID] = replayOf
	return nil
}

func (f *fakeReplays) ReplayWorkflowID(eventID, endpointID string, n int) string {
	return fmt.Sprintf("replay/%s/%s/%d", eventID, endpointID, n)
}

// isRetryable reports whether err is an attempt's application error that
// Temporal retries.
func isRetryable(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && !appErr.NonRetryable()
}

// eventsOfEveryType makes one event of each type but record_snapshot
// (which a resync writes) on a module of f's tenant with a status field,
// and returns the events pending, f's own first.
func eventsOfEveryType(t *testing.T, f *fixture) []models.Event {
	t.Helper()
	ctx := t.Context()
	s := f.store
	m, err := s.CreateModule(ctx, f.tenantID, models.ModuleInput{
		Slug: ptr("orders"), Name: ptr("Orders"),
		Fields: &[]models.Field{
			{Name: "title", Type: models.TypeString},
			{Name: "state", Type: models.TypeStatus, States: []string{"open", "shipped"}, Initial: "open"},
		},
	})
	if err != nil {
		t.Fatalf("create module: %v", err)
	}
	r, err := s.CreateRecord(ctx, m, map[string]any{"title": "first"}, nil)
	if err != nil {
		t.Fatalf("create record: %v", err)
	}
	for _, p := range []models.RecordPatch{
		{Fields: map[string]any{"state": "shipped"}},
		{CustomData: map[string]any{"note": "gift"}},
	} {
		if _, _, err := s.UpdateRecord(ctx, m, r.ID, p, nil); err != nil {
			t.Fatalf("update record: %v", err)
		}
	}
	if _, err := s.DeleteRecord(ctx, m, r.ID); err != nil {
		t.Fatalf("delete record: %v", err)
	}
	other, _, err := s.CreateEndpoint(ctx, f.tenantID, models.EndpointInput{URL: ptr("https://example.com/hook"), Events: &[]string{models.EventRecordCreated}},
		func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatalf("create endpoint: %v", err)
	}
	if _, err := s.UpdateEndpoint(ctx, f.tenantID, other.ID, models.EndpointInput{Enabled: ptr(false)}, nil); err != nil {
		t.Fatalf("disable endpoint: %v", err)
	}
	events, err := s.PendingEvents(ctx, 100)
	if err != nil {
		t.Fatalf("pending events: %v", err)
	}
	seen := map[string]bool{}
	for _, ev := range events {
		seen[ev.Type] = true
	}
	for _, typ := range models.EventTypes {
		if !seen[typ] && typ != models.EventRecordSnapshot {
			t.Fatalf("no %s event among %d pending", typ, len(events))
		}
	}
	return events
}

// headerOf makes a message's headers an http.Header, as a consumer hands
// them to a Standard Webhooks library.
func headerOf[V any](h map[string]V) http.Header {
	out := http.Header{}
	for k, v := range h {
		switch v := any(v).(type) {
		case string:
			out.Set(k, v)
		case []string:
			for _, s := range v {
				out.Add(k, s)
			}
		}
	}
	return out
}

// rabbit is a topic exchange of its own on the test RabbitMQ and a queue
// of its own, both gone when the test ends.
type rabbit struct {
	ch              *amqp.Channel
	exchange, queue string
}

func newRabbit(t *testing.T) *rabbit {
	t.Helper()
	conn, err := amqp.Dial(storetest.RabbitMQ(t))
	if err != nil {
		t.Fatalf("dial RabbitMQ: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open channel: %v", err)
	}
	r := &rabbit{ch: ch, exchange: "recordhub-test-" + models.NewID(""), queue: "recordhub-test-" + models.NewID("")}
	if err := ch.ExchangeDeclare(r.exchange, "topic", false, true, false, false, nil); err != nil {
		t.Fatalf("declare exchange: %v", err)
	}
	if _, err := ch.QueueDeclare(r.queue, false, true, false, false, nil); err != nil {
		t.Fatalf("declare queue: %v", err)
	}
	t.Cleanup(func() { ch.ExchangeDelete(r.exchange, false, false); ch.QueueDelete(r.queue, false, false, false) })
	return r
}

// url is an endpoint URL publishing to the exchange with routing key.
func (r *rabbit) url(t *testing.T, routingKey string) string {
	t.Helper()
	u, err := url.Parse(storetest.RabbitMQURL())
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = "exchange=" + r.exchange + "&routing_key=" + routingKey
	return u.String()
}

func (r *rabbit) bind(t *testing.T, pattern string) {
	t.Helper()
	if err := r.ch.QueueBind(r.queue, pattern, r.exchange, false, nil); err != nil {
		t.Fatalf("bind queue: %v", err)
	}
}

// messages takes every message in the queue.
func (r *rabbit) messages(t *testing.T) []amqp.Delivery {
	t.Helper()
	var out []amqp.Delivery
	for {
		m, ok, err := r.ch.Get(r.queue, true)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// natsStream is a JetStream stream of its own on the test NATS server,
// capturing subject+".>", gone when the test ends.
type natsStream struct {
	js      jetstream.JetStream
	name    string
	subject string
}

func newNATSStream(t *testing.T) *natsStream {
	t.Helper()
	nc, err := nats.Connect(storetest.NATS(t))
	if err != nil {
		t.Fatalf("connect NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimPrefix(models.NewID(""), "_")
	return &natsStream{js: js, name: "RECORDHUB_TEST_" + id, subject: "recordhub-test-" + id}
}

// create makes the stream, with a dedupe window of a minute.
func (s *natsStream) create(t *testing.T) jetstream.Stream {
	t.Helper()
	st, err := s.js.CreateStream(t.Context(), jetstream.StreamConfig{
		Name: s.name, Subjects: []string{s.subject + ".>"}, Storage: jetstream.MemoryStorage, Duplicates: time.Minute,
	})
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	t.Cleanup(func() { s.js.DeleteStream(context.Background(), s.name) })
	return st
}

// messages reads every message of the stream.
func (s *natsStream) messages(t *testing.T) []*jetstream.RawStreamMsg {
	t.Helper()
	st, err := s.js.Stream(t.Context(), s.name)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatalf("get message %d: %v", seq, err)
		}
		out = append(out, m)
	}
	return out
}
