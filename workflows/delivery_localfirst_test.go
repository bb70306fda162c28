package workflows

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// attemptEvents is what a delivery's history shows of its attempts.
type attemptEvents struct {
	// local are the local first attempt's markers: the AttemptOutput of
	// each, from its result or its failure's details.
	local []activities.AttemptOutput
	// timers are the delays of the timers started.
	timers []time.Duration
	// scheduled are the inputs of the attempt activities scheduled, and
	// policies their retry policies.
	scheduled []activities.AttemptInput
	policies  []*commonpb.RetryPolicy
	// started are the Temporal attempt numbers of the activity's started
	// events, and lastFailures the AttemptOutput in their last failure.
	started      []int32
	lastFailures []activities.AttemptOutput
	// failed and completed are the activity's final outcomes.
	failed, completed []activities.AttemptOutput
	// workflowTasks counts the workflow tasks started.
	workflowTasks int
}

// readAttemptEvents reads the attempts from a delivery's history.
func readAttemptEvents(t *testing.T, hist *historypb.History) attemptEvents {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	decode := func(p *commonpb.Payloads, v any) {
		t.Helper()
		if err := dc.FromPayloads(p, v); err != nil {
			t.Fatalf("decode %v: %v", p, err)
		}
	}
	outcome := func(f *failurepb.Failure) activities.AttemptOutput {
		t.Helper()
		var out activities.AttemptOutput
		if info := f.GetApplicationFailureInfo(); info != nil && info.GetDetails() != nil {
			decode(info.GetDetails(), &out)
		}
		return out
	}
	var ev attemptEvents
	for _, e := range hist.GetEvents() {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			ev.workflowTasks++
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			m := e.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "LocalActivity" {
				continue
			}
			var out activities.AttemptOutput
			if m.GetFailure() != nil {
				out = outcome(m.GetFailure())
			} else {
				decode(m.GetDetails()["result"], &out)
			}
			ev.local = append(ev.local, out)
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			ev.timers = append(ev.timers, e.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			if a.GetActivityType().GetName() != AttemptActivityName {
				continue
			}
			var in activities.AttemptInput
			decode(a.GetInput(), &in)
			ev.scheduled = append(ev.scheduled, in)
			ev.policies = append(ev.policies, a.GetRetryPolicy())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			a := e.GetActivityTaskStartedEventAttributes()
			ev.started = append(ev.started, a.GetAttempt())
			ev.lastFailures = append(ev.lastFailures, outcome(a.GetLastFailure()))
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			ev.failed = append(ev.failed, outcome(e.GetActivityTaskFailedEventAttributes().GetFailure()))
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			var out activities.AttemptOutput
			decode(e.GetActivityTaskCompletedEventAttributes().GetResult(), &out)
			ev.completed = append(ev.completed, out)
		}
	}
	return ev
}

// recordedHistory reads a recorded history from testdata.
func recordedHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

// TestLocalFirstAttemptInHistory reads the recorded histories of the local
// first attempt: a delivery accepted at once is one workflow task whose
// attempt is a marker, with no activity; a failing one shows its first
// attempt as a marker with its failure, then a timer for the schedule's
// first delay, then one attempt activity whose retry policy continues the
// schedule for the attempts left, its started event numbering its
// attempts and carrying the previous one's failure, and its failure the
// last attempt's.
func TestLocalFirstAttemptInHistory(t *testing.T) {
	// A delivery accepted at once is six events: started, the workflow
	// task (scheduled, started, completed), the attempt's marker and
	// completed.
	testLocalFirstAttemptInHistory(t, "webhook_delivery", 6)
}

func testLocalFirstAttemptInHistory(t *testing.T, prefix string, events int) {
	okHist := recordedHistory(t, prefix+"_success.json")
	if n := len(okHist.GetEvents()); n != events {
		t.Errorf("accepted delivery: %d history events, want %d", n, events)
	}
	ok := readAttemptEvents(t, okHist)
	if diff := cmp.Diff([]activities.AttemptOutput{{DeliveryID: "whd_1", Attempt: 1, StatusCode: 204}}, ok.local); diff != "" {
		t.Errorf("accepted delivery's local attempts (-want +got):\n%s", diff)
	}
	if len(ok.scheduled) != 0 || len(ok.timers) != 0 || ok.workflowTasks != 1 {
		t.Errorf("accepted delivery: %d activities, %d timers, %d workflow tasks; want none, none and one",
			len(ok.scheduled), len(ok.timers), ok.workflowTasks)
	}

	// retry_max 3 on a 1 s, ×2, 2 s schedule.
	exhausted := recordedHistory(t, prefix+"_exhausted.json")
	workflowID := exhausted.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId()
	ev := readAttemptEvents(t, exhausted)
	failed := func(n int) activities.AttemptOutput {
		out, _ := failing(n)
		return out
	}
	if diff := cmp.Diff([]activities.AttemptOutput{failed(1)}, ev.local); diff != "" {
		t.Errorf("local attempts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{time.Second}, ev.timers); diff != "" {
		t.Errorf("timers (-want +got):\n%s", diff)
	}
	if len(ev.scheduled) == 1 && WorkflowID(ev.scheduled[0].EventID, "whe_hist") != workflowID {
		t.Errorf("attempt of event %s in %s's history", ev.scheduled[0].EventID, workflowID)
	}
	want := activities.AttemptInput{TenantID: "ten_hist", EndpointID: "whe_hist", FirstAttempt: 2, RetryMax: 3}
	if diff := cmp.Diff([]activities.AttemptInput{want}, ev.scheduled, cmpopts.IgnoreFields(activities.AttemptInput{}, "EventID")); diff != "" {
		t.Errorf("attempt activities scheduled (-want +got):\n%s", diff)
	}
	if len(ev.policies) == 1 {
		p := ev.policies[0]
		if p.GetInitialInterval().AsDuration() != 2*time.Second || p.GetMaximumAttempts() != 2 {
			t.Errorf("activity's retry policy %v: want 2 s first (after attempt 2), 2 attempts (2 and 3)", p)
		}
	}
	if diff := cmp.Diff([]int32{2}, ev.started); diff != "" {
		t.Errorf("started events' attempts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]activities.AttemptOutput{failed(2)}, ev.lastFailures); diff != "" {
		t.Errorf("started events' last failures (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]activities.AttemptOutput{failed(3)}, ev.failed); diff != "" {
		t.Errorf("activity's failure (-want +got):\n%s", diff)
	}
}

// TestLocalFirstAttemptOnServer delivers with the real attempt activity
// through a Temporal server run in-process, to a receiver that answers 503
// and holds attempt 3 until told: while it is held, the server shows the
// attempt activity pending at its second attempt with the failure of
// delivery attempt 2; when the delivery has failed, its history shows the
// local first attempt and the activity's last attempt, and every attempt
// left its row, numbered 1 to 4 like X-Webhook-Attempt.
func TestLocalFirstAttemptOnServer(t *testing.T) {
	c := recoveryTemporal(t)
	ctx := t.Context()
	var (
		mu       sync.Mutex
		attempts []string
	)
	held, release := make(chan struct{}, 1), make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := r.Header.Get("X-Webhook-Attempt")
		mu.Lock()
		attempts = append(attempts, n)
		mu.Unlock()
		if n == "3" {
			held <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer recv.Close()

	f := newFixture(t, models.SQLite)
	retry := 4
	ep, _, err := f.store.CreateEndpoint(ctx, f.tenantID,
		models.EndpointInput{URL: &recv.URL, Events: &[]string{models.EventRecordCreated}, RetryMax: &retry},
		func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	ev := f.record(t)
	d, err := activities.NewDeliverer(f.store, activities.Config{Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	const queue = "local-first"
	w := worker.New(c, queue, worker.Options{})
	Register(w, d)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	in, err := deliveryInput(ev, ep, activities.Schedule{Initial: 100 * time.Millisecond, MaxInterval: 200 * time.Millisecond, AttemptTimeout: 5 * time.Second}, "")
	if err != nil {
		t.Fatal(err)
	}
	id := WorkflowID(ev.ID, ep.ID)
	run, err := c.ExecuteWorkflow(ctx, startOptions(id, queue, in, true), DeliveryWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}

	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("attempt 3 did not reach the receiver")
	}
	desc, err := c.DescribeWorkflowExecution(ctx, id, run.GetRunID())
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if p := desc.GetPendingActivities(); len(p) != 1 {
		t.Errorf("%d pending activities, want the attempt activity", len(p))
	} else {
		var last activities.AttemptOutput
		if info := p[0].GetLastFailure().GetApplicationFailureInfo(); info != nil {
			if err := converter.GetDefaultDataConverter().FromPayloads(info.GetDetails(), &last); err != nil {
				t.Fatal(err)
			}
		}
		if p[0].GetActivityType().GetName() != AttemptActivityName || p[0].GetAttempt() != 2 || last.Attempt != 2 || last.StatusCode != 503 {
			t.Errorf("pending %s at attempt %d, last failure %+v: want %s at its attempt 2 after delivery attempt 2's 503",
				p[0].GetActivityType().GetName(), p[0].GetAttempt(), last, AttemptActivityName)
		}
	}

	err = run.Get(ctx, nil)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != DeliveryFailedErrorType {
		t.Fatalf("workflow error %v, want %s", err, DeliveryFailedErrorType)
	}
	got := readAttemptEvents(t, history(ctx, t, c, id, run.GetRunID()))
	if len(got.local) != 1 || got.local[0].Attempt != 1 || got.local[0].StatusCode != 503 {
		t.Errorf("local attempts %+v, want attempt 1's 503", got.local)
	}
	if diff := cmp.Diff([]int32{3}, got.started); diff != "" {
		t.Errorf("started events' attempts (-want +got):\n%s", diff)
	}
	if len(got.failed) != 1 || got.failed[0].Attempt != 4 || got.lastFailures[0].Attempt != 3 {
		t.Errorf("activity's failure %+v after %+v, want attempt 4's after attempt 3's", got.failed, got.lastFailures)
	}

	rows, _, err := f.store.ListDeliveries(ctx, f.tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 10}, EndpointID: ep.ID})
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int
	for _, r := range rows {
		if r.RunID != run.GetRunID() || r.Error != models.DeliveryErrHTTPStatus {
			t.Errorf("row %d: run %s, error %q; want run %s, %q", r.Attempt, r.RunID, r.Error, run.GetRunID(), models.DeliveryErrHTTPStatus)
		}
		numbers = append(numbers, r.Attempt)
	}
	slices.Sort(numbers)
	if diff := cmp.Diff([]int{1, 2, 3, 4}, numbers); diff != "" {
		t.Errorf("rows' attempt numbers (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"1", "2", "3", "4"}, attempts); diff != "" {
		t.Errorf("X-Webhook-Attempt received (-want +got):\n%s", diff)
	}
	health, err := f.store.GetEndpoint(ctx, f.tenantID, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := health.ConsecutiveFailures; n != 1 {
		t.Errorf("endpoint's consecutive failures %d, want 1: one failed delivery", n)
	}
}

// cuttableConn makes a client's calls to Temporal fail once cut, as a
// worker's do when its process is frozen or cut off while its workflow
// task runs: the task's heartbeat is lost, and the server gives the task
// to another worker when it times out.
type cuttableConn struct{ cut atomic.Bool }

func (c *cuttableConn) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if c.cut.Load() {
		return status.Error(codes.Unavailable, "cut off by the test")
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// TestLocalAttemptRunAgainIsNextAttempt runs a local first attempt that
// outlasts its workflow task, so that the worker heartbeats the task (a
// completed workflow task in the history), then cuts that worker off:
// the task times out, another worker replays the execution and runs the
// local attempt again while the first one still waits at the receiver.
// The second request must be numbered 2, never a second attempt 1, and
// each number has one row.
func TestLocalAttemptRunAgainIsNextAttempt(t *testing.T) {
	ts := temporalServer(t)
	ctx := t.Context()
	var (
		mu       sync.Mutex
		attempts []string
	)
	first := make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		attempts = append(attempts, r.Header.Get("X-Webhook-Attempt"))
		n := len(attempts)
		mu.Unlock()
		if n == 1 {
			// Held until the attempt's timeout: in flight while the
			// workflow task moves to the other worker.
			close(first)
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	f := newFixture(t, models.SQLite)
	ep, _, err := f.store.CreateEndpoint(ctx, f.tenantID,
		models.EndpointInput{URL: &recv.URL, Events: &[]string{models.EventRecordCreated}},
		func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	ev := f.record(t)
	d, err := activities.NewDeliverer(f.store, activities.Config{Schedule: activities.Schedule{AttemptTimeout: 8 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	const queue = "local-again"
	conn := &cuttableConn{}
	frozen := ts.NewClientWithOptions(client.Options{Logger: quietLogger(t), ConnectionOptions: client.ConnectionOptions{
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(conn.intercept)},
	}})
	w1 := worker.New(frozen, queue, worker.Options{})
	Register(w1, d)
	if err := w1.Start(); err != nil {
		t.Fatal(err)
	}
	defer w1.Stop()

	in, err := deliveryInput(ev, ep, activities.Schedule{Initial: time.Second, MaxInterval: time.Second, AttemptTimeout: 8 * time.Second}, "")
	if err != nil {
		t.Fatal(err)
	}
	id := WorkflowID(ev.ID, ep.ID)
	opts := startOptions(id, queue, in, false)
	// A workflow task far shorter than the attempt: the worker heartbeats
	// it while the receiver holds the request.
	opts.WorkflowTaskTimeout = 2 * time.Second
	c := ts.GetDefaultClient()
	run, err := c.ExecuteWorkflow(ctx, opts, DeliveryWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("the first attempt did not reach the receiver")
	}
	storetest.Eventually(t, 30*time.Second, "the worker to heartbeat its workflow task", func() bool {
		for _, e := range history(ctx, t, c, id, run.GetRunID()).GetEvents() {
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
				return true
			}
		}
		return false
	})
	conn.cut.Store(true)
	w2 := worker.New(c, queue, worker.Options{})
	Register(w2, d)
	if err := w2.Start(); err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()

	var out DeliveryOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := slices.Clone(attempts)
	mu.Unlock()
	// On a busy machine the other worker's own workflow task may time out
	// too, and run the attempt yet again: each run has a number of its own.
	sent := map[string]int{}
	for _, n := range got {
		if sent[n]++; sent[n] > 1 {
			t.Errorf("X-Webhook-Attempt %s sent %d times (all: %v)", n, sent[n], got)
		}
	}
	if len(got) < 2 || got[0] != "1" {
		t.Errorf("X-Webhook-Attempt received %v, want 1 and then the attempt run again", got)
	}
	if out.Attempts != len(got) || !out.Succeeded {
		t.Errorf("delivery output %+v, want attempt %d succeeded", out, len(got))
	}
	rows, _, err := f.store.ListDeliveries(ctx, f.tenantID, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 100}, EndpointID: ep.ID})
	if err != nil {
		t.Fatal(err)
	}
	var numbers, want []string
	for _, r := range rows {
		numbers = append(numbers, strconv.Itoa(r.Attempt))
	}
	want = slices.Clone(got)
	slices.Sort(numbers)
	slices.Sort(want)
	if diff := cmp.Diff(want, numbers); diff != "" {
		t.Errorf("rows' attempt numbers against the requests' (-want +got):\n%s", diff)
	}
}

// TestLocalAttemptsBoundedPerTenant: tenant A's receiver holds every
// request; A's local first attempts beyond the bound are made as attempt
// activities instead, so that they do not fill the worker's workflow-task
// slots, and tenant B's delivery reaches its receiver while all of A's
// wait at theirs. Without the bound A's four local attempts take the four
// slots and B's delivery waits for A's attempts to time out.
func TestLocalAttemptsBoundedPerTenant(t *testing.T) {
	ts := temporalServer(t)
	c := ts.GetDefaultClient()
	ctx := t.Context()
	release := make(chan struct{})
	var (
		mu    sync.Mutex
		held  int
		aSeen []string
	)
	bArrived := make(chan struct{}, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/b" {
			bArrived <- struct{}{}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		mu.Lock()
		held++
		aSeen = append(aSeen, r.Header.Get("X-Webhook-Attempt"))
		mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	heldNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return held
	}

	a := newFixture(t, models.SQLite)
	urlA, urlB := recv.URL+"/a", recv.URL+"/b"
	epA, _, err := a.store.CreateEndpoint(ctx, a.tenantID, models.EndpointInput{URL: &urlA, Events: &[]string{models.EventRecordCreated}},
		func(context.Context, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	b := a.neighbour(t, urlB)

	d, err := activities.NewDeliverer(a.store, activities.Config{
		Schedule: activities.Schedule{AttemptTimeout: time.Minute}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, LocalAttemptsPerTenant: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	const queue = "local-bounded"
	w := worker.New(c, queue, worker.Options{MaxConcurrentWorkflowTaskExecutionSize: 4})
	Register(w, d)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	policy := activities.Schedule{Initial: time.Second, MaxInterval: time.Second, AttemptTimeout: time.Minute}
	deliver := func(ev *models.Event, ep *models.WebhookEndpoint) client.WorkflowRun {
		t.Helper()
		in, err := deliveryInput(ev, ep, policy, "")
		if err != nil {
			t.Fatal(err)
		}
		run, err := c.ExecuteWorkflow(ctx, startOptions(WorkflowID(ev.ID, ep.ID), queue, in, false), DeliveryWorkflowName, in)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	var runs []client.WorkflowRun
	for range 6 {
		runs = append(runs, deliver(a.record(t), epA))
	}
	storetest.Eventually(t, 30*time.Second, "A's first attempts to reach the receiver", func() bool { return heldNow() >= 2 })

	before := len(a.pending(t))
	if _, err := a.store.CreateRecord(ctx, b.module, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	pending := a.pending(t)
	if len(pending) != before+1 {
		t.Fatalf("%d pending events after B's creation, want %d", len(pending), before+1)
	}
	runB := deliver(&pending[len(pending)-1], b.endpoint)
	select {
	case <-bArrived:
	case <-time.After(30 * time.Second):
		t.Fatalf("B's delivery did not arrive while A's %d attempts were held", heldNow())
	}
	if err := runB.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	storetest.Eventually(t, 30*time.Second, "all of A's first attempts to reach the receiver", func() bool { return heldNow() == 6 })
	close(release)
	for _, r := range runs {
		var out DeliveryOutput
		if err := r.Get(ctx, &out); err != nil || out.Attempts != 1 {
			t.Errorf("A's delivery %s: %+v, %v; want attempt 1 succeeded", r.GetID(), out, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"1", "1", "1", "1", "1", "1"}, aSeen); diff != "" {
		t.Errorf("A's X-Webhook-Attempt received (-want +got):\n%s", diff)
	}
}
