package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestPurgeWorkflow runs the Purge workflow with the real activity against
// SQLite: every kind is purged with its own retention, a kind kept for
// ever is left alone, and the batches go on until none is left.
func TestPurgeWorkflow(t *testing.T) {
	ctx := t.Context()
	db := storetest.NewDB(t, models.SQLite)
	s := db.Open(t, models.Options{})
	now := time.Now().UTC().Truncate(time.Second)
	var logs []models.AccessLog
	for i := range 25 {
		at := now.Add(-48 * time.Hour)
		if i >= 20 {
			at = now.Add(-time.Hour)
		}
		logs = append(logs, models.AccessLog{ID: models.NewID(models.PrefixAccessLog), Method: "GET", Path: "/",
			Route: "/", Status: 200, RequestID: "r", CreatedAt: at})
	}
	if err := s.InsertAccessLogs(ctx, logs); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		at := now.Add(-72 * time.Hour)
		if err := s.InsertAttempt(ctx, &models.WebhookDelivery{
			TenantID: "ten_1", EventID: "evt_1", EventType: models.EventRecordCreated, EndpointID: "whe_1", WorkflowID: "wf",
			RunID: "run", Attempt: i + 1, RequestURL: "https://hooks.example.com/", RequestHeaders: models.Headers{},
			ResponseHeaders: models.Headers{}, StartedAt: at, FinishedAt: at,
		}); err != nil {
			t.Fatal(err)
		}
	}

	// An answer stored under an idempotency key two days ago, by a store
	// whose clock says so, and one stored now.
	past := db.Open(t, models.Options{Now: func() time.Time { return now.Add(-48 * time.Hour) }})
	for i, st := range []*models.Store{past, s} {
		a := models.IdempotentAnswer{Fingerprint: []byte("f"), Status: 201, Body: []byte("{}")}
		if err := st.SaveIdempotentAnswer(ctx, "key_1", fmt.Sprint("k", i), time.Hour, a); err != nil {
			t.Fatal(err)
		}
	}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	registerWorkflows(env)
	RegisterPurge(env, activities.NewPurger(s, activities.PurgeConfig{
		Retention: map[models.PurgeKind]time.Duration{
			models.PurgeAccessLogs: 24 * time.Hour, models.PurgeDeliveries: 0, models.PurgeInboundEvents: 24 * time.Hour,
			models.PurgeIdempotencyKeys: 24 * time.Hour,
		},
		Batch: 7, Pause: time.Millisecond, Now: func() time.Time { return now },
	}))
	env.ExecuteWorkflow(PurgeWorkflowName, PurgeWorkflowInput{})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var got PurgeWorkflowOutput
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-24 * time.Hour)
	want := PurgeWorkflowOutput{Kinds: []activities.PurgeOutput{
		{Kind: models.PurgeAccessLogs, Deleted: 20, Cutoff: cutoff},
		{Kind: models.PurgeDeliveries},
		{Kind: models.PurgeEvents},
		{Kind: models.PurgeInboundEvents, Cutoff: cutoff},
		{Kind: models.PurgeIdempotencyKeys, Deleted: 1, Cutoff: cutoff},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("purge output (-want +got):\n%s", diff)
	}
	for table, want := range map[string]int{"access_logs": 5, "webhook_deliveries": 3, "idempotency_keys": 1} {
		var n int
		if err := db.SQL(t).QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%s: %d rows left, want %d", table, n, want)
		}
	}
}

// countingStore deletes batch rows per call until left runs out, and
// fails every purge of failKind.
type countingStore struct {
	mu       sync.Mutex
	left     int64
	calls    map[models.PurgeKind]int
	failKind models.PurgeKind
}

func (c *countingStore) Purge(_ context.Context, kind models.PurgeKind, _ time.Time, batch int) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[kind]++
	if kind == c.failKind {
		return 0, errors.New("database is down")
	}
	n := min(c.left, int64(batch))
	c.left -= n
	return n, nil
}

// TestPurgeWorkflowBudgetAndFailure: a kind whose purge outlasts its
// budget stops with More set (the next run goes on); a kind whose purge
// fails is retried, then reported in the workflow's error, and the other
// kinds are purged all the same.
func TestPurgeWorkflowBudgetAndFailure(t *testing.T) {
	store := &countingStore{left: 1_000_000, calls: map[models.PurgeKind]int{}, failKind: models.PurgeEvents}
	var (
		clockMu sync.Mutex
		clock   = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	)
	// Every reading of the clock moves it a minute: the budget of five
	// minutes allows a few batches.
	now := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		clock = clock.Add(time.Minute)
		return clock
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	registerWorkflows(env)
	RegisterPurge(env, activities.NewPurger(store, activities.PurgeConfig{
		Retention: map[models.PurgeKind]time.Duration{
			models.PurgeAccessLogs: time.Hour, models.PurgeEvents: time.Hour, models.PurgeInboundEvents: time.Hour,
		},
		Batch: 100, Pause: time.Millisecond, Budget: 5 * time.Minute, Now: now,
	}))
	env.ExecuteWorkflow(PurgeWorkflowName, PurgeWorkflowInput{})
	err := env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !strings.Contains(err.Error(), "purge events") || !strings.Contains(err.Error(), "database is down") {
		t.Fatalf("workflow error %v, want one naming the events purge", err)
	}
	if got := store.calls[models.PurgeEvents]; got != 3 {
		t.Errorf("events purge tried %d times, want 3 (the retry policy's attempts)", got)
	}
	if store.calls[models.PurgeAccessLogs] == 0 || store.calls[models.PurgeInboundEvents] == 0 {
		t.Errorf("calls %v: every kind but the failing one must be purged", store.calls)
	}
	if store.calls[models.PurgeAccessLogs] > 5 {
		t.Errorf("access logs: %d batches in a budget of 5 minutes of a clock moving a minute a reading", store.calls[models.PurgeAccessLogs])
	}
	if store.calls[models.PurgeDeliveries] != 0 {
		t.Errorf("deliveries kept for ever were purged %d times", store.calls[models.PurgeDeliveries])
	}
}

// Deployments sharing a namespace run on their own task queues and
// databases: each needs a purge schedule of its own.
func TestPurgeScheduleIDFor(t *testing.T) {
	for _, c := range []struct{ queue, want string }{
		{"", PurgeScheduleID},
		{DefaultTaskQueue, PurgeScheduleID},
		{"deployment-b", PurgeScheduleID + "-deployment-b"},
	} {
		if got := PurgeScheduleIDFor(c.queue); got != c.want {
			t.Errorf("PurgeScheduleIDFor(%q) = %q, want %q", c.queue, got, c.want)
		}
	}
}
