package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// fakeRecovery plays the recovery's activities: pages of the given sizes
// (a page shorter than the page size is the last), each found event
// replayed, and records what it was asked.
type fakeRecovery struct {
	mu       sync.Mutex
	pages    []int
	pageSize int
	// fail answers the call'th call (0-based) of RecoverPage with an error.
	fail     func(call int) error
	calls    []activities.RecoverPageInput
	finished []activities.FinishRecoveryInput
}

func (f *fakeRecovery) page(_ context.Context, in activities.RecoverPageInput) (activities.RecoverPageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := len(f.calls)
	f.calls = append(f.calls, in)
	if f.fail != nil {
		if err := f.fail(call); err != nil {
			return activities.RecoverPageOutput{}, err
		}
	}
	i := 0
	if in.After != "" {
		for i < len(f.pages) && pageLast(i) != in.After {
			i++
		}
		i++
	}
	if i >= len(f.pages) {
		return activities.RecoverPageOutput{Done: true}, nil
	}
	n := f.pages[i]
	return activities.RecoverPageOutput{Found: n, Replayed: n, Last: pageLast(i), Done: n < f.pageSize}, nil
}

func (f *fakeRecovery) finish(_ context.Context, in activities.FinishRecoveryInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = append(f.finished, in)
	return nil
}

func (f *fakeRecovery) register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(f.page, activity.RegisterOptions{Name: RecoverPageActivityName})
	r.RegisterActivityWithOptions(f.finish, activity.RegisterOptions{Name: FinishRecoveryActivityName})
}

// pageLast is the fake's last event id of page i.
func pageLast(i int) string { return "evt_page" + string(rune('a'+i%26)) + string(rune('a'+i/26)) }

func recoveryInput() RecoveryInput {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	return RecoveryInput{
		RecoveryID: "rcv_1", TenantID: "ten_1", EndpointID: "whe_1",
		Since: at.Add(-2 * time.Hour), Until: at, AsOf: at, PageSize: 10,
	}
}

func recoveryEnv(t *testing.T, f *fakeRecovery) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	registerWorkflows(env)
	f.register(env)
	return env
}

// TestRecoveryWorkflow: pages follow each other by cursor, each told the
// progress before it, until a short page; the counts add up, and the
// recovery is recorded completed once.
func TestRecoveryWorkflow(t *testing.T) {
	f := &fakeRecovery{pages: []int{10, 10, 4}, pageSize: 10}
	env := recoveryEnv(t, f)
	env.ExecuteWorkflow(RecoveryWorkflowName, recoveryInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var got RecoveryOutput
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	if want := (RecoveryOutput{Found: 24, Replayed: 24}); got != want {
		t.Errorf("output %+v, want %+v", got, want)
	}
	in := recoveryInput()
	page := func(after string, found int) activities.RecoverPageInput {
		return activities.RecoverPageInput{
			RecoveryID: in.RecoveryID, TenantID: in.TenantID, EndpointID: in.EndpointID, Since: in.Since, Until: in.Until,
			AsOf: in.AsOf, After: after, Limit: 10, Before: models.RecoveryProgress{Found: found, Replayed: found},
		}
	}
	want := []activities.RecoverPageInput{page("", 0), page(pageLast(0), 10), page(pageLast(1), 20)}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("pages asked (-want +got):\n%s", diff)
	}
	wantFinish := []activities.FinishRecoveryInput{{RecoveryID: "rcv_1", Status: models.RecoveryCompleted, Progress: models.RecoveryProgress{Found: 24, Replayed: 24}}}
	if diff := cmp.Diff(wantFinish, f.finished); diff != "" {
		t.Errorf("finish (-want +got):\n%s", diff)
	}
}

// TestRecoveryWorkflowRetriesAPage: a page that fails is asked again, the
// same page with the same progress, and the recovery goes on.
func TestRecoveryWorkflowRetriesAPage(t *testing.T) {
	f := &fakeRecovery{pages: []int{10, 3}, pageSize: 10, fail: func(call int) error {
		if call == 1 {
			return errors.New("database went away")
		}
		return nil
	}}
	env := recoveryEnv(t, f)
	env.ExecuteWorkflow(RecoveryWorkflowName, recoveryInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 3 || !cmp.Equal(f.calls[1], f.calls[2]) {
		t.Fatalf("pages asked %+v, want the second asked twice alike", f.calls)
	}
	if len(f.finished) != 1 || f.finished[0].Status != models.RecoveryCompleted || f.finished[0].Progress.Replayed != 13 {
		t.Errorf("finish %+v, want completed with 13 replayed", f.finished)
	}
}

// TestRecoveryWorkflowStopped: the endpoint disabled mid-way fails the
// recovery at once, recorded failed with the reason and the progress so far.
func TestRecoveryWorkflowStopped(t *testing.T) {
	f := &fakeRecovery{pages: []int{10, 10, 10}, pageSize: 10, fail: func(call int) error {
		if call == 1 {
			return temporal.NewNonRetryableApplicationError("the endpoint was disabled", activities.ErrTypeRecoveryStopped, nil)
		}
		return nil
	}}
	env := recoveryEnv(t, f)
	env.ExecuteWorkflow(RecoveryWorkflowName, recoveryInput())
	if err := env.GetWorkflowError(); err == nil {
		t.Fatal("the recovery succeeded; want it failed")
	}
	if len(f.calls) != 2 {
		t.Errorf("%d pages asked, want 2 (a stop is not retried)", len(f.calls))
	}
	want := []activities.FinishRecoveryInput{{RecoveryID: "rcv_1", Status: models.RecoveryFailed,
		Progress: models.RecoveryProgress{Found: 10, Replayed: 10}, Error: "the endpoint was disabled"}}
	if diff := cmp.Diff(want, f.finished); diff != "" {
		t.Errorf("finish (-want +got):\n%s", diff)
	}
}

// TestRecoveryWorkflowContinuesAsNew: past pagesPerRun pages the recovery
// continues as new, carrying its cursor and progress, and records nothing
// finished yet.
func TestRecoveryWorkflowContinuesAsNew(t *testing.T) {
	pages := make([]int, pagesPerRun+5)
	for i := range pages {
		pages[i] = 10
	}
	f := &fakeRecovery{pages: pages, pageSize: 10}
	env := recoveryEnv(t, f)
	env.ExecuteWorkflow(RecoveryWorkflowName, recoveryInput())
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", err)
	}
	var next RecoveryInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	want := recoveryInput()
	want.After = pageLast(pagesPerRun - 1)
	want.Progress = models.RecoveryProgress{Found: 10 * pagesPerRun, Replayed: 10 * pagesPerRun}
	if diff := cmp.Diff(want, next); diff != "" {
		t.Errorf("next run's input (-want +got):\n%s", diff)
	}
	if len(f.finished) != 0 {
		t.Errorf("finished %+v before the last run", f.finished)
	}
}

// TestRecoveryWorkflowPassesCap: the recovery's cap goes to every page (the
// pages keep it), and a page that reached it ends the recovery completed.
func TestRecoveryWorkflowPassesCap(t *testing.T) {
	f := &fakeRecovery{pages: []int{10, 10, 10, 10}, pageSize: 10}
	env := recoveryEnv(t, f)
	in := recoveryInput()
	in.MaxEvents = 20
	env.OnActivity(RecoverPageActivityName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, p activities.RecoverPageInput) (activities.RecoverPageOutput, error) {
			out, err := f.page(ctx, p)
			if p.Before.Found+out.Found >= p.MaxEvents {
				out.Done, out.Capped = true, true
			}
			return out, err
		})
	env.ExecuteWorkflow(RecoveryWorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var caps []int
	for _, c := range f.calls {
		caps = append(caps, c.MaxEvents)
	}
	if diff := cmp.Diff(caps, []int{20, 20}); diff != "" {
		t.Errorf("the pages' caps (-got +want):\n%s", diff)
	}
	wantFinish := []activities.FinishRecoveryInput{{RecoveryID: "rcv_1", Status: models.RecoveryCompleted, Progress: models.RecoveryProgress{Found: 20, Replayed: 20}}}
	if diff := cmp.Diff(f.finished, wantFinish); diff != "" {
		t.Errorf("finish (-got +want):\n%s", diff)
	}
}
