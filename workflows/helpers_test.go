package workflows

// The package's test helpers: what more than one of its test files uses.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/server/temporaltest"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/cmd/recordhub/devtemporal"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// fixture is a migrated store with a tenant, a module and two endpoints:
// one subscribed to record_created, one only to record_deleted.
type fixture struct {
	store      *models.Store
	tenantID   string
	module     *models.Module
	subscribed *models.WebhookEndpoint
	other      *models.WebhookEndpoint
}

func newFixture(t *testing.T, d models.Dialect) *fixture {
	t.Helper()
	return newFixtureOn(t, storetest.Open(t, d))
}

// newFixtureOn makes the fixture's tenant, module and endpoints in s.
func newFixtureOn(t *testing.T, s *models.Store) *fixture {
	t.Helper()
	ctx := t.Context()
	tenant, _, _, err := s.CreateTenant(ctx, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	slug, name := "things", "Things"
	fields := []models.Field{{Name: "title", Type: models.TypeString}}
	m, err := s.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: s, tenantID: tenant.ID, module: m}
	f.subscribed = f.endpoint(t, 7, models.EventRecordCreated)
	f.other = f.endpoint(t, 5, models.EventRecordDeleted)
	return f
}

// endpoint creates an endpoint subscribed to events, on every module.
func (f *fixture) endpoint(t *testing.T, retryMax int, events ...string) *models.WebhookEndpoint {
	t.Helper()
	u := "https://receiver.example/hook"
	ep, _, err := f.store.CreateEndpoint(t.Context(), f.tenantID, models.EndpointInput{URL: &u, Events: &events, RetryMax: &retryMax},
		func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// neighbour is a second tenant in the fixture's store, with a module and
// one endpoint at url subscribed to record_created.
type neighbour struct {
	tenantID string
	module   *models.Module
	endpoint *models.WebhookEndpoint
}

func (f *fixture) neighbour(t *testing.T, url string) neighbour {
	t.Helper()
	ctx := t.Context()
	tenant, _, _, err := f.store.CreateTenant(ctx, "b", 100)
	if err != nil {
		t.Fatal(err)
	}
	slug, name := "other", "Other"
	m, err := f.store.CreateModule(ctx, tenant.ID, models.ModuleInput{Slug: &slug, Name: &name, Fields: &[]models.Field{}})
	if err != nil {
		t.Fatal(err)
	}
	ep, _, err := f.store.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{URL: &url, Events: &[]string{models.EventRecordCreated}},
		func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return neighbour{tenantID: tenant.ID, module: m, endpoint: ep}
}

// orderedEndpoint creates an endpoint subscribed to record_created and
// record_updated whose ordering is "record".
func (f *fixture) orderedEndpoint(t *testing.T) *models.WebhookEndpoint {
	t.Helper()
	ordering := models.OrderingRecord
	ep, err := f.store.UpdateEndpoint(t.Context(), f.tenantID, f.endpoint(t, 3, models.EventRecordCreated, models.EventRecordUpdated).ID,
		models.EndpointInput{Ordering: &ordering}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// update changes the record's title n times, each a record_updated event.
func (f *fixture) update(t *testing.T, recordID string, n int) {
	t.Helper()
	for i := range n {
		if _, _, err := f.store.UpdateRecord(t.Context(), f.module, recordID, models.RecordPatch{Fields: map[string]any{"title": fmt.Sprint(i)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// record creates a record, which writes a record_created event, and
// returns the event.
func (f *fixture) record(t *testing.T) *models.Event {
	t.Helper()
	before := f.pending(t)
	if _, err := f.store.CreateRecord(t.Context(), f.module, map[string]any{"title": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	after := f.pending(t)
	if len(after) != len(before)+1 {
		t.Fatalf("%d pending events after a creation, want %d", len(after), len(before)+1)
	}
	ev := after[len(after)-1]
	return &ev
}

func (f *fixture) pending(t *testing.T) []models.Event {
	t.Helper()
	evs, err := f.store.PendingEvents(t.Context(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// start is one ExecuteWorkflow call.
type start struct {
	opts client.StartWorkflowOptions
	in   DeliveryInput
	err  error
	// at is when the call was made.
	at time.Time
}

// fakeStarter plays Temporal's side of a start: an id that was started
// once is refused as already started, as REJECT_DUPLICATE and FAIL do.
type fakeStarter struct {
	mu      sync.Mutex
	calls   []start
	started map[string]bool
	// fail, when set, makes the start of an id fail with what it returns.
	fail func(id string) error
	// delay is how long a start takes.
	delay time.Duration
	// signals are the sequencers' signals.
	signals []signal
}

func newFakeStarter() *fakeStarter { return &fakeStarter{started: map[string]bool{}} }

func (f *fakeStarter) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	at := time.Now()
	time.Sleep(f.delay) // the fake's own latency, not a wait for a condition
	f.mu.Lock()
	defer f.mu.Unlock()
	c := start{opts: opts, at: at}
	if wf != DeliveryWorkflowName {
		c.err = fmt.Errorf("workflow %v is not %s", wf, DeliveryWorkflowName)
	} else if len(args) != 1 {
		c.err = fmt.Errorf("%d workflow arguments", len(args))
	} else if in, ok := args[0].(DeliveryInput); !ok {
		c.err = fmt.Errorf("workflow argument %T", args[0])
	} else {
		c.in = in
	}
	switch {
	case c.err != nil:
	case ctx.Err() != nil:
		c.err = ctx.Err()
	case f.fail != nil && f.fail(opts.ID) != nil:
		c.err = f.fail(opts.ID)
	case f.started[opts.ID]:
		c.err = serviceerror.NewWorkflowExecutionAlreadyStarted("workflow execution already started", "", "run-"+opts.ID)
	default:
		f.started[opts.ID] = true
	}
	f.calls = append(f.calls, c)
	if c.err != nil {
		return nil, c.err
	}
	return fakeRun{id: opts.ID, runID: "run-" + opts.ID}, nil
}

// signal is one SignalWithStartWorkflow call that succeeded.
type signal struct {
	id string
	d  SequencedDelivery
}

// SignalWithStartWorkflow plays a sequencer's signal-with-start: it fails
// as fail says for the sequencer's id or the delivery's, and records the
// signal otherwise.
func (f *fakeStarter) SignalWithStartWorkflow(ctx context.Context, id, name string, arg any, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := arg.(SequencedDelivery)
	switch {
	case !ok || name != SequenceSignalName || wf != RecordSequenceWorkflowName || opts.ID != id:
		return nil, fmt.Errorf("signal %s %T to %v %s", name, arg, wf, opts.ID)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case f.fail != nil && f.fail(id) != nil:
		return nil, f.fail(id)
	case f.fail != nil && f.fail(WorkflowID(d.Delivery.EventID, d.Delivery.EndpointID)) != nil:
		return nil, f.fail(WorkflowID(d.Delivery.EventID, d.Delivery.EndpointID))
	}
	f.signals = append(f.signals, signal{id: id, d: d})
	return fakeRun{id: id, runID: "run-" + id}, nil
}

// signalled returns the signals made.
func (f *fakeStarter) signalled() []signal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.signals)
}

// starts returns the calls that started a workflow.
func (f *fakeStarter) starts() []start {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []start
	for _, c := range f.calls {
		if c.err == nil {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeStarter) numCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// callTimes returns when each call was made, from the n-th on.
func (f *fakeStarter) callTimes(n int) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, c := range f.calls[min(n, len(f.calls)):] {
		out = append(out, c.at)
	}
	return out
}

func (f *fakeStarter) setFail(fail func(id string) error) {
	f.mu.Lock()
	f.fail = fail
	f.mu.Unlock()
}

type fakeRun struct {
	client.WorkflowRun
	id, runID string
}

func (r fakeRun) GetID() string    { return r.id }
func (r fakeRun) GetRunID() string { return r.runID }

var errUnavailable = serviceerror.NewUnavailable("connection refused")

// attemptFunc plays the attempt activity: it answers attempt n (from 1).
type attemptFunc func(n int) (activities.AttemptOutput, error)

// failing answers like the real activity when the receiver answers 500.
func failing(n int) (activities.AttemptOutput, error) {
	out := activities.AttemptOutput{DeliveryID: fmt.Sprintf("whd_%d", n), Attempt: n, StatusCode: 500, Error: "http_status"}
	return out, temporal.NewApplicationError("the receiver answered 500 Internal Server Error", activities.ErrTypeDeliveryFailed, out)
}

// succeedingAt fails until attempt k, which the receiver accepts.
func succeedingAt(k int) attemptFunc {
	return func(n int) (activities.AttemptOutput, error) {
		if n < k {
			return failing(n)
		}
		return activities.AttemptOutput{DeliveryID: fmt.Sprintf("whd_%d", n), Attempt: n, StatusCode: 204}, nil
	}
}

// refusing returns an error of type errType that the error itself does not
// mark non-retryable: only the workflow's retry policy can stop it.
func refusing(errType string) attemptFunc {
	return func(n int) (activities.AttemptOutput, error) {
		out := activities.AttemptOutput{DeliveryID: fmt.Sprintf("whd_%d", n), Attempt: n, Error: errType}
		return out, temporal.NewApplicationError("refused", errType, out)
	}
}

// run is one delivery in the time-skipping test environment.
type run struct {
	// starts are the attempts' start times, from the workflow's start.
	starts []time.Duration
	// numbers are the attempts' delivery attempt numbers, and local
	// whether each ran as a local activity.
	numbers []int
	local   []bool
	infos   []activity.Info
	out     DeliveryOutput
	err     error
	// failure is the DeliveryOutput in a failed workflow's error details.
	failure DeliveryOutput
	// settles are the settle activity's inputs, one per call.
	settles []activities.SettleInput
}

// testLogger shows the SDK's warnings and errors with a failed test's output.
func testLogger(t *testing.T) log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
}

func seconds(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v) * time.Second
	}
	return out
}

func allowURL(context.Context, string) error { return nil }

// cpuTime is the CPU time this process has used, user and system: on a
// machine shared with other work, a steadier measure than ns/op.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func newDispatcher(f *fixture, s Starter) *Dispatcher {
	return &Dispatcher{Store: f.store, Starter: s, Policy: testPolicy}
}

func newFlippingReceiver(t testing.TB) *flippingReceiver {
	r := &flippingReceiver{got: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got[req.Header.Get("X-Webhook-Id")]++
		r.mu.Unlock()
		if !r.ok.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// quietLogger drops the SDK's log: it logs every failed attempt as an
// error, thousands of them here.
func quietLogger(tb testing.TB) log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelError + 1})))
}

// recoveryTemporal starts a Temporal server in-process for the test and
// returns its client, the delivery search attributes registered.
func recoveryTemporal(tb testing.TB) client.Client {
	return temporalServer(tb).GetDefaultClient()
}

// temporalServer starts a Temporal server in-process for the test, the
// delivery search attributes registered, for tests that need more than
// its default client.
func temporalServer(tb testing.TB) *temporaltest.TestServer {
	if testing.Short() {
		tb.Skip("needs an in-process Temporal server; skipped by -short")
	}
	ts := temporaltest.NewServer(temporaltest.WithBaseClientOptions(client.Options{Logger: quietLogger(tb)}))
	tb.Cleanup(ts.Stop)
	if err := RegisterSearchAttributes(tb.Context(), ts.GetDefaultClient(), ts.GetDefaultNamespace()); err != nil {
		tb.Fatal(err)
	}
	return ts
}

func newRecoveryRig(tb testing.TB, c client.Client, d models.Dialect) *recoveryRig {
	ctx := tb.Context()
	r := &recoveryRig{
		// Unpaced: the tests time the recovery itself (TestBulkPacePerTenant
		// checks the pace).
		tb: tb, c: c, store: storetest.NewDB(tb, d).Open(tb, models.Options{BulkRate: -1}), queue: "recovery-" + string(d), rcv: newFlippingReceiver(tb),
		policy: activities.Schedule{Initial: 200 * time.Millisecond, MaxInterval: time.Second, AttemptTimeout: 5 * time.Second},
	}
	tenant, _, _, err := r.store.CreateTenant(ctx, "acme", 600)
	if err != nil {
		tb.Fatal(err)
	}
	r.tenantID = tenant.ID
	if r.module, err = r.store.CreateModule(ctx, tenant.ID, models.ModuleInput{
		Slug: ptr("orders"), Name: ptr("Orders"), Fields: &[]models.Field{{Name: "n", Type: models.TypeInteger}},
	}); err != nil {
		tb.Fatal(err)
	}
	url := r.rcv.srv.URL
	if r.ep, _, err = r.store.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{
		URL: &url, Events: &[]string{models.EventRecordCreated}, RetryMax: ptr(1),
	}, nil); err != nil {
		tb.Fatal(err)
	}
	if r.deliver, err = activities.NewDeliverer(r.store, activities.Config{
		Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}); err != nil {
		tb.Fatal(err)
	}
	r.replayer = &Replayer{Starter: c, Store: r.store, Policy: r.policy, TaskQueue: r.queue}
	return r
}

func ptr[T any](v T) *T { return &v }

// history returns a workflow run's whole history.
func history(ctx context.Context, t *testing.T, c client.Client, workflowID, runID string) *historypb.History {
	t.Helper()
	hist := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	return hist
}

// resyncRecords is how many records the end-to-end resync sends, the
// issue's 10,000; the environment's RECORDHUB_RESYNC_RECORDS changes it
// (fewer for a quick run, more for a measurement).
func resyncRecords(t testing.TB) int {
	if v := os.Getenv("RECORDHUB_RESYNC_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("RECORDHUB_RESYNC_RECORDS=%q: want a positive number", v)
		}
		return n
	}
	return 10000
}

// embeddedTemporal starts the Temporal server recordhub embeds (its
// database a file, as `recordhub serve` keeps it) in this process and
// returns a client of it with recordhub's search attributes registered.
func embeddedTemporal(tb testing.TB) client.Client {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs an in-process Temporal server; skipped by -short")
	}
	srv, err := devtemporal.Start(tb.Context(), devtemporal.Config{DataDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Stop() })
	c, err := client.Dial(client.Options{HostPort: srv.Address(), Namespace: devtemporal.DefaultNamespace, Logger: quietLogger(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	if err := RegisterSearchAttributes(tb.Context(), c, devtemporal.DefaultNamespace); err != nil {
		tb.Fatal(err)
	}
	return c
}
