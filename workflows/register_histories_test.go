// Recorded histories of the Delivery, Purge, Recovery and Resync workflows: TestReplayRecordedHistories
// replays every testdata/*.json file on each `make test`, so a change to the
// workflow that would break its running executions (a new, removed or
// reordered command, a renamed workflow) fails there instead of in
// production. Such a change needs workflow.GetVersion.
//
// To record the histories, against a real Temporal server run in-process:
//
//	RECORDHUB_RECORD_HISTORIES=1 go test ./workflows -run TestRecordHistories -count=1 -v
//
// The recorder writes only files that do not exist yet: a recorded history
// stands for executions that may still be running, and stays while the
// release that started them is supported (the rule in register.go). After
// a versioned change, add cases with new file names for the new code path.
package workflows

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// recordEnv is the environment variable that turns the recorder on.
const recordEnv = "RECORDHUB_RECORD_HISTORIES"

// historyCase is one recorded delivery.
type historyCase struct {
	// file is the history's file name under testdata.
	file string
	// workflowID is the execution's id (a replay's has its own form).
	workflowID string
	in         DeliveryInput
	// attempt plays the attempt activity.
	attempt attemptFunc
	// hangAt is the attempt that never answers (its worker is gone): the
	// activity waits out its StartToClose timeout. 0: none.
	hangAt int
	// want is the result, or a failed delivery's error details.
	want   DeliveryOutput
	failed bool
	// settled: the settle activity must run once for the execution.
	settled bool
	// purge, when set, makes the case a Purge workflow's, with this
	// result; the purge activity answers purgedRows for each kind.
	purge *PurgeWorkflowOutput
	// recovery, when set, makes the case a Recovery workflow's with this
	// input; its pages are played by recordedPages.
	recovery *RecoveryInput
	// resync, when set, makes the case a resync with this input.
	resync *ResyncInput
	// sequence, when set, makes the case a RecordSequence's, handed these
	// deliveries by signal-with-start in this order.
	sequence []SequencedDelivery
	// deferLocal: the local first attempt answers that it was deferred
	// (the tenant's local attempts at their bound), and the attempt
	// activity makes the attempts.
	deferLocal bool
	// throttled is how many of the first calls of the attempt (the local
	// one first) are refused a slot by the endpoint's throttle.
	throttled int
}

// purgedRows is what the recorded purge activity deletes of each kind.
const purgedRows = 3

// purgeCase is what a recorded purge answers: purgedRows of each kind.
func purgeCase() *PurgeWorkflowOutput {
	out := &PurgeWorkflowOutput{}
	for _, k := range models.PurgeKinds {
		out.Kinds = append(out.Kinds, activities.PurgeOutput{Kind: k, Deleted: purgedRows})
	}
	return out
}

// historyCases are the recorded deliveries: one per way a delivery ends.
func historyCases() []historyCase {
	// Short delays, so that recording the retries takes seconds.
	quick := activities.Schedule{Initial: time.Second, MaxInterval: 2 * time.Second, AttemptTimeout: 5 * time.Second}
	in := func(eventID string, retryMax int) DeliveryInput {
		return DeliveryInput{
			TenantID: "ten_hist", EventID: eventID, EventType: "record_created", EndpointID: "whe_hist",
			ModuleID: "mod_hist", RecordID: "rec_hist", RetryMax: retryMax, Policy: quick,
		}
	}
	// A StartToClose of 16 s: the attempt timeout plus the row margin.
	whLost := in("evt_wh_lost", 1)
	whLost.Policy.AttemptTimeout = time.Second
	whReplay := in("evt_wh_replayed", 5)
	whReplay.ReplayOf = "whd_wh_replayed"
	return []historyCase{
		// purge.json was recorded before the purge of idempotency keys
		// (purgeIdempotencyVersion), purge_idempotency_keys.json after:
		// today's code runs both cases the same way.
		{file: "purge.json", workflowID: PurgeScheduleID + "-hist", purge: purgeCase()},
		{file: "purge_idempotency_keys.json", workflowID: PurgeScheduleID + "-hist-idem", purge: purgeCase()},
		{file: "recovery_completed.json", workflowID: RecoveryWorkflowID("whe_hist", 1), recovery: recoveryCase("rcv_done")},
		{file: "recovery_stopped.json", workflowID: RecoveryWorkflowID("whe_hist", 2), recovery: recoveryCase("rcv_stopped"), failed: true},
		// As DeliveryWorkflowName: the first attempt a local activity.
		{
			file: "webhook_delivery_success.json", workflowID: WorkflowID("evt_wh_success", "whe_hist"),
			in: in("evt_wh_success", 5), attempt: succeedingAt(1),
			want: DeliveryOutput{Attempts: 1, DeliveryID: "whd_1", StatusCode: 204, Succeeded: true},
		},
		{
			file: "webhook_delivery_retried.json", workflowID: WorkflowID("evt_wh_retried", "whe_hist"),
			in: in("evt_wh_retried", 5), attempt: succeedingAt(3),
			want: DeliveryOutput{Attempts: 3, DeliveryID: "whd_3", StatusCode: 204, Succeeded: true},
		},
		{
			file: "webhook_delivery_exhausted.json", workflowID: WorkflowID("evt_wh_exhausted", "whe_hist"),
			in: in("evt_wh_exhausted", 3), attempt: failing,
			want: DeliveryOutput{Attempts: 3, DeliveryID: "whd_3", StatusCode: 500, Error: "http_status"}, failed: true,
		},
		{
			file: "webhook_delivery_refused.json", workflowID: WorkflowID("evt_wh_refused", "whe_hist"),
			in: in("evt_wh_refused", 5), attempt: refusing(activities.ErrTypeEndpointGone),
			want: DeliveryOutput{Attempts: 1, DeliveryID: "whd_1", Error: activities.ErrTypeEndpointGone}, failed: true,
		},
		{
			file: "webhook_delivery_lost.json", workflowID: WorkflowID("evt_wh_lost", "whe_hist"),
			in: whLost, attempt: failing, hangAt: 1, settled: true,
			want: DeliveryOutput{Attempts: 1}, failed: true,
		},
		{
			file: "webhook_delivery_replay.json", workflowID: ReplayWorkflowID("evt_wh_replayed", "whe_hist", 1),
			in: whReplay, attempt: succeedingAt(1),
			want: DeliveryOutput{Attempts: 1, DeliveryID: "whd_1", StatusCode: 204, Succeeded: true},
		},
		{
			// The sequencer's children as DeliveryWorkflowName.
			file: "record_sequence_webhook.json", workflowID: SequenceWorkflowID("whe_hist", "rec_hist"),
			sequence: []SequencedDelivery{
				{Delivery: in("evt_wh_seq_1", 1), RecordVersion: 1}, {Delivery: in("evt_wh_seq_3", 1), RecordVersion: 3},
				{Delivery: in("evt_wh_seq_2", 1), RecordVersion: 2}, {Delivery: in("evt_wh_seq_1", 1), RecordVersion: 1},
			},
		},
		{
			// The local first attempt deferred to the attempt activity,
			// which fails once and then succeeds.
			file: "webhook_delivery_deferred.json", workflowID: WorkflowID("evt_wh_deferred", "whe_hist"),
			in: in("evt_wh_deferred", 5), attempt: succeedingAt(2), deferLocal: true,
			want: DeliveryOutput{Attempts: 2, DeliveryID: "whd_2", StatusCode: 204, Succeeded: true},
		},
		{
			// The local first attempt and the activity after it are
			// refused a slot by the endpoint's throttle, each waiting on a
			// timer; then attempt 1 is made, and succeeds.
			file: "webhook_delivery_throttled.json", workflowID: WorkflowID("evt_wh_throttled", "whe_hist"),
			in: in("evt_wh_throttled", 5), attempt: succeedingAt(1), throttled: 2,
			want: DeliveryOutput{Attempts: 1, DeliveryID: "whd_1", StatusCode: 204, Succeeded: true},
		},
		{file: "resync_completed.json", workflowID: ResyncWorkflowID("whe_hist", 1), resync: resyncCase("rsy_done")},
		{file: "resync_stopped.json", workflowID: ResyncWorkflowID("whe_hist", 2), resync: resyncCase("rsy_stopped"), failed: true},
	}
}

// recordedPages plays a recorded recovery's pages: "rcv_done" has two
// events on its first page and one on its second (page size 2), and
// "rcv_stopped" finds its endpoint disabled.
func recordedPages(_ context.Context, in activities.RecoverPageInput) (activities.RecoverPageOutput, error) {
	switch {
	case in.RecoveryID == "rcv_stopped":
		return activities.RecoverPageOutput{}, temporal.NewNonRetryableApplicationError("the endpoint was disabled", activities.ErrTypeRecoveryStopped, nil)
	case in.After == "":
		return activities.RecoverPageOutput{Found: 2, Replayed: 2, Last: "evt_2"}, nil
	}
	return activities.RecoverPageOutput{Found: 1, Replayed: 1, Last: "evt_3", Done: true}, nil
}

// recordedResyncPages plays a recorded resync's pages: "rsy_done" sends
// two records on its first page, one and one covered on its second (page
// size 2), and "rsy_stopped" finds its endpoint disabled.
func recordedResyncPages(_ context.Context, in activities.ResyncPageInput) (activities.ResyncPageOutput, error) {
	switch {
	case in.ResyncID == "rsy_stopped":
		return activities.ResyncPageOutput{}, temporal.NewNonRetryableApplicationError("the endpoint was disabled", activities.ErrTypeResyncStopped, nil)
	case in.After.RecordID == "":
		return activities.ResyncPageOutput{Examined: 2, Sent: 2, Last: models.ResyncCursor{ModuleID: "mod_1", RecordID: "rec_2"}}, nil
	}
	return activities.ResyncPageOutput{Examined: 2, Sent: 1, Covered: 1, Last: models.ResyncCursor{ModuleID: "mod_1", RecordID: "rec_4"}, Done: true}, nil
}

// resyncCase is a recorded resync's input.
func resyncCase(id string) *ResyncInput {
	return &ResyncInput{ResyncID: id, TenantID: "ten_hist", EndpointID: "whe_hist", Position: "42",
		StartedAt: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), PageSize: 2}
}

// recoveryCase is a recorded recovery's input.
func recoveryCase(id string) *RecoveryInput {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	return &RecoveryInput{RecoveryID: id, TenantID: "ten_hist", EndpointID: "whe_hist", Since: at.Add(-2 * time.Hour), Until: at, AsOf: at, PageSize: 2}
}

// pinnedWorkflowNames are the names registerWorkflows registers.
var pinnedWorkflowNames = []string{DeliveryWorkflowName, PurgeWorkflowName, RecoveryWorkflowName, ResyncWorkflowName, RecordSequenceWorkflowName}

// TestReplayRecordedHistories replays every recorded history with the
// workflow registered as the worker registers it: a non-deterministic
// change to Delivery, or a change of its pinned name, fails here.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range historyCases() {
		if !slices.Contains(files, filepath.Join("testdata", c.file)) {
			t.Errorf("testdata/%s is missing: record it with %s=1 go test ./workflows -run TestRecordHistories", c.file, recordEnv)
		}
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// The replayer also finds a workflow by its Go function's name,
			// so it would not notice a changed DeliveryWorkflowName: check
			// the recorded name against the pinned ones.
			if got := recordedWorkflowType(t, f); !slices.Contains(pinnedWorkflowNames, got) {
				t.Errorf("%s records workflow type %q, want one of the pinned %q", f, got, pinnedWorkflowNames)
			}
			// As the service's worker finds workflows: by pinned name only.
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DisableRegistrationAliasing: true})
			if err != nil {
				t.Fatal(err)
			}
			registerWorkflows(r)
			if err := r.ReplayWorkflowHistoryFromJSONFile(testLogger(t), f); err != nil {
				t.Errorf("replay of %s: %v", f, err)
			}
		})
	}
}

// recordedWorkflowType returns the workflow type of the history in file.
func recordedWorkflowType(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	if len(hist.GetEvents()) == 0 {
		t.Fatalf("%s holds no events", file)
	}
	return hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
}

// TestRecordHistories records the histories of historyCases: the real
// Delivery workflow, started as the dispatcher starts it, with the attempt
// activity played by each case's attemptFunc, on an in-process Temporal
// server. It runs only when RECORDHUB_RECORD_HISTORIES is set.
func TestRecordHistories(t *testing.T) {
	if os.Getenv(recordEnv) == "" {
		t.Skipf("set %s=1 to record the workflow histories in testdata", recordEnv)
	}
	ctx := t.Context()
	ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(client.Options{Logger: testLogger(t)}))
	c := ts.GetDefaultClient()
	if err := RegisterSearchAttributes(ctx, c, ts.GetDefaultNamespace()); err != nil {
		t.Fatal(err)
	}
	cases := historyCases()
	byEvent := map[string]historyCase{}
	for _, hc := range cases {
		byEvent[hc.in.EventID] = hc
	}
	for _, hc := range cases {
		for _, d := range hc.sequence {
			attempt := succeedingAt(1)
			if d.Delivery.EventID == "evt_wh_seq_2" {
				attempt = failing
			}
			byEvent[d.Delivery.EventID] = historyCase{in: d.Delivery, attempt: attempt}
		}
	}
	settles := make(chan activities.SettleInput, len(cases))
	var throttledCalls atomic.Int64
	ts.NewWorker(DefaultTaskQueue, func(r worker.Registry) {
		registerWorkflows(r)
		r.RegisterActivityWithOptions(func(ctx context.Context, in activities.AttemptInput) (activities.AttemptOutput, error) {
			hc, ok := byEvent[in.EventID]
			want := activities.AttemptInput{TenantID: hc.in.TenantID, EventID: hc.in.EventID, EndpointID: hc.in.EndpointID, ReplayOf: hc.in.ReplayOf,
				FirstAttempt: in.FirstAttempt, RetryMax: in.RetryMax, Renumber: in.Renumber, Throttled: in.Throttled}
			if !ok || in != want {
				return activities.AttemptOutput{}, temporal.NewNonRetryableApplicationError("unexpected attempt input", "TestError", nil, in)
			}
			if hc.deferLocal && activity.GetInfo(ctx).IsLocalActivity {
				return activities.AttemptOutput{}, temporal.NewApplicationErrorWithOptions("deferred",
					activities.ErrTypeAttemptDeferred, temporal.ApplicationErrorOptions{NonRetryable: true})
			}
			// The delivery attempt number, as the activity counts it.
			n := max(in.FirstAttempt, 1) + int(activity.GetInfo(ctx).Attempt) - 1
			if hc.throttled > 0 && throttledCalls.Add(1) <= int64(hc.throttled) {
				return throttledFor(n, time.Second)
			}
			if n == hc.hangAt {
				<-ctx.Done()
				return activities.AttemptOutput{}, ctx.Err()
			}
			return hc.attempt(n)
		}, activity.RegisterOptions{Name: AttemptActivityName})
		r.RegisterActivityWithOptions(func(_ context.Context, in activities.SettleInput) error {
			settles <- in
			return nil
		}, activity.RegisterOptions{Name: SettleDeliveryActivityName})
		r.RegisterActivityWithOptions(func(ctx context.Context, in activities.PurgeInput) (activities.PurgeOutput, error) {
			return activities.PurgeOutput{Kind: in.Kind, Deleted: purgedRows}, nil
		}, activity.RegisterOptions{Name: PurgeActivityName})
		r.RegisterActivityWithOptions(recordedPages, activity.RegisterOptions{Name: RecoverPageActivityName})
		r.RegisterActivityWithOptions(func(context.Context, activities.FinishRecoveryInput) error { return nil },
			activity.RegisterOptions{Name: FinishRecoveryActivityName})
		r.RegisterActivityWithOptions(recordedResyncPages, activity.RegisterOptions{Name: ResyncPageActivityName})
		r.RegisterActivityWithOptions(func(context.Context, activities.FinishResyncInput) error { return nil },
			activity.RegisterOptions{Name: FinishResyncActivityName})
	})
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, hc := range cases {
		t.Run(hc.file, func(t *testing.T) {
			path := filepath.Join("testdata", hc.file)
			var hist *historypb.History
			switch {
			case hc.purge != nil:
				hist = recordPurge(t, c, hc)
			case hc.recovery != nil:
				hist = recordRecovery(t, c, hc)
			case hc.resync != nil:
				hist = recordResync(t, c, hc)
			case hc.sequence != nil:
				hist = recordSequence(t, c, hc)
			default:
				hist = recordDelivery(t, c, hc, settles)
			}
			if _, err := os.Stat(path); err == nil {
				t.Logf("kept the existing %s (delete it to record it again)", path)
				return
			}
			b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s: %d events", path, len(hist.GetEvents()))
		})
	}
}

// recordDelivery runs hc's delivery to its end, checks its outcome and
// returns its history.
func recordDelivery(t *testing.T, c client.Client, hc historyCase, settles <-chan activities.SettleInput) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, startOptions(hc.workflowID, DefaultTaskQueue, hc.in, true), DeliveryWorkflowName, hc.in)
	if err != nil {
		t.Fatal(err)
	}
	var got DeliveryOutput
	err = run.Get(ctx, &got)
	if hc.failed {
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != DeliveryFailedErrorType {
			t.Fatalf("workflow error %v, want one of type %s", err, DeliveryFailedErrorType)
		}
		if err := appErr.Details(&got); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(hc.want, got); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	// The cases run one at a time, so a settle call is this case's.
	var settled []activities.SettleInput
	for len(settles) > 0 {
		settled = append(settled, <-settles)
	}
	var want []activities.SettleInput
	if hc.settled {
		want = append(want, activities.SettleInput{TenantID: hc.in.TenantID, EventID: hc.in.EventID, EndpointID: hc.in.EndpointID,
			WorkflowID: hc.workflowID, RunID: run.GetRunID()})
	}
	if diff := cmp.Diff(want, settled); diff != "" {
		t.Fatalf("settle calls (-want +got):\n%s", diff)
	}
	return history(ctx, t, c, hc.workflowID, run.GetRunID())
}

// recordPurge runs hc's purge, as the schedule starts it, checks its
// result and returns its history.
func recordPurge(t *testing.T, c client.Client, hc historyCase) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: hc.workflowID, TaskQueue: DefaultTaskQueue},
		PurgeWorkflowName, PurgeWorkflowInput{})
	if err != nil {
		t.Fatal(err)
	}
	var got PurgeWorkflowOutput
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*hc.purge, got); diff != "" {
		t.Fatalf("purge result (-want +got):\n%s", diff)
	}
	return history(ctx, t, c, hc.workflowID, run.GetRunID())
}

// recordRecovery runs hc's recovery, as Recoveries.Start starts it, checks
// how it ends and returns its history.
func recordRecovery(t *testing.T, c client.Client, hc historyCase) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: hc.workflowID, TaskQueue: DefaultTaskQueue},
		RecoveryWorkflowName, *hc.recovery)
	if err != nil {
		t.Fatal(err)
	}
	var got RecoveryOutput
	err = run.Get(ctx, &got)
	switch {
	case hc.failed && err == nil:
		t.Fatal("the recovery completed; want it failed")
	case !hc.failed && err != nil:
		t.Fatal(err)
	case !hc.failed && got != (RecoveryOutput{Found: 3, Replayed: 3}):
		t.Fatalf("recovery output %+v, want 3 found and replayed", got)
	}
	return history(ctx, t, c, hc.workflowID, run.GetRunID())
}

// recordResync runs hc's resync to its end and returns its history.
func recordResync(t *testing.T, c client.Client, hc historyCase) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: hc.workflowID, TaskQueue: DefaultTaskQueue},
		ResyncWorkflowName, *hc.resync)
	if err != nil {
		t.Fatal(err)
	}
	var got ResyncOutput
	err = run.Get(ctx, &got)
	switch {
	case hc.failed && err == nil:
		t.Fatal("the resync completed; want it failed")
	case !hc.failed && err != nil:
		t.Fatal(err)
	case !hc.failed && got != (ResyncOutput{Examined: 4, Sent: 3, Covered: 1}):
		t.Fatalf("resync output %+v, want 4 examined, 3 sent, 1 covered", got)
	}
	return history(ctx, t, c, hc.workflowID, run.GetRunID())
}

// recordSequence hands hc's deliveries to the sequencer as the dispatcher
// does, waits until every delivery closed, and returns the history of the
// sequencer's first run.
func recordSequence(t *testing.T, c client.Client, hc historyCase) *historypb.History {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var first client.WorkflowRun
	for _, d := range hc.sequence {
		ev := &models.Event{ID: d.Delivery.EventID, TenantID: d.Delivery.TenantID, RecordID: d.Delivery.RecordID, RecordVersion: d.RecordVersion}
		if err := signalSequence(ctx, c, ev, DefaultTaskQueue, d.Delivery, time.Minute); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = c.GetWorkflow(ctx, hc.workflowID, "")
		}
	}
	for _, d := range hc.sequence {
		storetest.Eventually(t, time.Minute, "delivery "+d.Delivery.EventID, func() bool {
			desc, err := c.DescribeWorkflowExecution(ctx, WorkflowID(d.Delivery.EventID, d.Delivery.EndpointID), "")
			return err == nil && desc.GetWorkflowExecutionInfo().GetCloseTime() != nil
		})
	}
	if err := c.GetWorkflow(ctx, hc.workflowID, first.GetRunID()).Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return history(ctx, t, c, hc.workflowID, first.GetRunID())
}
