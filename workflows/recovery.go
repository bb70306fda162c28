package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// Bulk recovery runs as one Recovery workflow per recovery, id
// RecoveryWorkflowID(endpoint, n). It pages through the endpoint's failed
// deliveries in its window with the RecoverPage activity, each page
// starting one replay execution per event, and ends with FinishRecovery.
// The names are pinned from the start.
const (
	RecoveryWorkflowName       = "Recovery"
	RecoverPageActivityName    = "RecoverPage"
	FinishRecoveryActivityName = "FinishRecovery"
)

// recoveryIDPrefix starts every recovery workflow id.
const recoveryIDPrefix = "webhook-recovery/"

// RecoveryWorkflowID is the id of an endpoint's n-th recovery (n ≥ 1).
func RecoveryWorkflowID(endpointID string, n int) string {
	return bulkWorkflowID(recoveryIDPrefix, endpointID, n)
}

// RecoveryInput is the Recovery workflow's input. The times are fixed when
// the recovery is asked for, so that every page, retried or not, sees the
// same window. Fields may be added, never removed or changed in meaning.
type RecoveryInput struct {
	RecoveryID string    `json:"recovery_id"`
	TenantID   string    `json:"tenant_id"`
	EndpointID string    `json:"endpoint_id"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	AsOf       time.Time `json:"as_of"`
	// After and Progress carry the recovery on into the next run.
	After    string                  `json:"after,omitempty"`
	Progress models.RecoveryProgress `json:"progress"`
	// PageSize is the events per page; zero means activities.DefaultRecoveryPage.
	PageSize int `json:"page_size,omitempty"`
	// PageHeartbeat is how soon a page whose worker died is retried
	// elsewhere; zero means DefaultPageHeartbeat.
	PageHeartbeat time.Duration `json:"page_heartbeat,omitempty"`
	// MaxEvents caps the events the recovery finds; zero means
	// models.MaxRecoveryEvents. The pages keep the cap: the workflow only
	// passes it on.
	MaxEvents int `json:"max_events,omitempty"`
}

// RecoveryOutput is a completed recovery's counts.
type RecoveryOutput struct {
	Found    int `json:"found"`
	Replayed int `json:"replayed"`
	Failed   int `json:"failed"`
}

// Recovery replays, page by page, the events whose deliveries to the
// endpoint failed in the window, and records the outcome. A page that
// fails is retried by Temporal (a worker that dies mid-page included);
// one that keeps failing, or the endpoint deleted or disabled, fails the
// recovery. Each page's activity writes the progress, so the status route
// shows it while the workflow runs.
func Recovery(ctx workflow.Context, in RecoveryInput) (RecoveryOutput, error) {
	if err := runPages(ctx, recoveryWorkflow, bulkInput[activities.RecoverPageOutput](&in), in.PageHeartbeat); err != nil {
		return RecoveryOutput{}, err
	}
	return RecoveryOutput{Found: in.Progress.Found, Replayed: in.Progress.Replayed, Failed: in.Progress.Failed}, nil
}

var recoveryWorkflow = bulkWorkflow{
	name: RecoveryWorkflowName, page: RecoverPageActivityName, finish: FinishRecoveryActivityName,
	stopped: activities.ErrTypeRecoveryStopped,
}

// nextPage, add and finished make *RecoveryInput a bulkInput for runPages.
func (in *RecoveryInput) nextPage() any {
	return activities.RecoverPageInput{
		RecoveryID: in.RecoveryID, TenantID: in.TenantID, EndpointID: in.EndpointID,
		Since: in.Since, Until: in.Until, AsOf: in.AsOf, After: in.After, Limit: in.PageSize, Before: in.Progress,
		MaxEvents: in.MaxEvents,
	}
}

func (in *RecoveryInput) add(page activities.RecoverPageOutput) bool {
	in.Progress.Found += page.Found
	in.Progress.Replayed += page.Replayed
	in.Progress.Failed += page.Failed
	in.After = page.Last
	return page.Done
}

func (in *RecoveryInput) finished(status, why string) any {
	return activities.FinishRecoveryInput{RecoveryID: in.RecoveryID, Status: status, Progress: in.Progress, Error: why}
}

// RegisterRecovery registers r's activities under their pinned names
// (the Recovery workflow is registered with the others by Register).
func RegisterRecovery(w worker.ActivityRegistry, r *activities.Recoverer) {
	w.RegisterActivityWithOptions(r.RecoverPage, activity.RegisterOptions{Name: RecoverPageActivityName})
	w.RegisterActivityWithOptions(r.FinishRecovery, activity.RegisterOptions{Name: FinishRecoveryActivityName})
}

// RecoveryStore is what starting a recovery reads and writes;
// *models.Store is one.
type RecoveryStore interface {
	GetEndpoint(ctx context.Context, tenantID, id string) (*models.WebhookEndpoint, error)
	CreateRecovery(ctx context.Context, e *models.WebhookEndpoint, since, until, asOf time.Time, workflowID func(n int) string) (*models.WebhookRecovery, error)
	FinishRecovery(ctx context.Context, id, status string, p models.RecoveryProgress, why string, at time.Time) error
	GetRecovery(ctx context.Context, tenantID, endpointID, id string) (*models.WebhookRecovery, error)
}

var _ RecoveryStore = (*models.Store)(nil)

// Recoveries starts bulk recoveries (api.Recoverer).
type Recoveries struct {
	Starter Starter
	// Describer lets Check find recoveries whose workflow is gone; nil
	// checks nothing.
	Describer Describer
	Store     RecoveryStore
	// TaskQueue is where recoveries and their replays run
	// (DefaultTaskQueue when empty).
	TaskQueue string
	// Now is the clock of the recovery's window; time.Now when nil.
	Now func() time.Time
	// PageSize and PageHeartbeat go into each recovery's input (zero:
	// the defaults).
	PageSize      int
	PageHeartbeat time.Duration
	// MaxEvents goes into each recovery's input (zero:
	// models.MaxRecoveryEvents).
	MaxEvents int
}

func (r *Recoveries) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// jobs is the start and check of recoveries with r's fields.
func (r *Recoveries) jobs() bulkJobs[*models.WebhookRecovery] {
	return bulkJobs[*models.WebhookRecovery]{
		kind: models.BulkRecovery, workflow: RecoveryWorkflowName,
		starter: r.Starter, describer: r.Describer, taskQueue: r.TaskQueue, now: r.now,
		fail: func(ctx context.Context, rec *models.WebhookRecovery, why string) error {
			return r.Store.FinishRecovery(ctx, rec.ID, models.RecoveryFailed, rec.Progress(), why, r.now())
		},
		reload: func(ctx context.Context, rec *models.WebhookRecovery) (*models.WebhookRecovery, error) {
			return r.Store.GetRecovery(ctx, rec.TenantID, rec.EndpointID, rec.ID)
		},
		running: func(err error) (*models.WebhookRecovery, bool) {
			var running *models.RecoveryRunningError
			if !errors.As(err, &running) {
				return nil, false
			}
			return running.Running, true
		},
		refuse: func(rec *models.WebhookRecovery) error { return &models.RecoveryRunningError{Running: rec} },
	}
}

// Check brings a recovery that its row says is running in line with its
// workflow (see bulkJobs.check): one whose workflow never started, or
// ended without recording its end, is marked failed.
func (r *Recoveries) Check(ctx context.Context, rec *models.WebhookRecovery) (*models.WebhookRecovery, error) {
	return r.jobs().check(ctx, rec)
}

// Start starts a recovery of the tenant's endpoint for the deliveries
// started from since until until, which is capped at (and defaults to)
// now: later deliveries are not failures to recover yet. A missing
// endpoint is ErrNotFound, a disabled one a conflict (enable it first),
// an empty window invalid, one with a recovery running a
// *models.RecoveryRunningError (a conflict naming it). A start that fails
// marks the recovery failed.
func (r *Recoveries) Start(ctx context.Context, tenantID, endpointID string, since time.Time, until *time.Time) (*models.WebhookRecovery, error) {
	// Microseconds: what both databases store.
	asOf := r.now().UTC().Truncate(time.Microsecond)
	end := asOf
	if until != nil && until.Before(end) {
		end = until.UTC()
	}
	if !since.Before(end) {
		return nil, models.Errorf(models.KindInvalid, "since must be before until and before now")
	}
	ep, err := r.Store.GetEndpoint(ctx, tenantID, endpointID)
	if err != nil {
		return nil, err
	}
	if !ep.Enabled {
		return nil, models.Errorf(models.KindConflict, "the endpoint is disabled; enable it (PATCH enabled true) before recovering its deliveries")
	}
	jobs := r.jobs()
	rec, err := jobs.create(ctx, func() (*models.WebhookRecovery, error) {
		return r.Store.CreateRecovery(ctx, ep, since, end, asOf, func(n int) string { return RecoveryWorkflowID(ep.ID, n) })
	})
	if err != nil {
		return nil, err
	}
	summary := fmt.Sprintf("recovery of %s: deliveries from %s to %s",
		ep.ID, rec.WindowSince.Format(time.RFC3339), rec.WindowUntil.Format(time.RFC3339))
	return jobs.start(ctx, rec, summary, RecoveryInput{
		RecoveryID: rec.ID, TenantID: tenantID, EndpointID: ep.ID,
		Since: rec.WindowSince, Until: rec.WindowUntil, AsOf: asOf,
		PageSize: r.PageSize, PageHeartbeat: r.PageHeartbeat, MaxEvents: r.MaxEvents,
	})
}
