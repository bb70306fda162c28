package workflows

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

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
