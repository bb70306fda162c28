package workflows

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// ReplayStore is what a replay reads and reserves; *models.Store is one.
type ReplayStore interface {
	GetEndpoint(ctx context.Context, tenantID, id string) (*models.WebhookEndpoint, error)
	GetEvent(ctx context.Context, tenantID, id string) (*models.Event, error)
	NextReplay(ctx context.Context, eventID, endpointID string, workflowID func(n int) string) (int, string, error)
}

var _ ReplayStore = (*models.Store)(nil)

// Replayer starts replays of delivery attempts (api.Replayer).
type Replayer struct {
	Starter Starter
	Store   ReplayStore
	// Policy is the delivery schedule from the configuration.
	Policy activities.Schedule
	// TaskQueue is where deliveries run (DefaultTaskQueue when empty).
	TaskQueue string
}

// Replay sends the event of delivery attempt d to its endpoint again, as a
// new Delivery execution with id ReplayWorkflowID(event, endpoint, n) for
// the next n, whose attempts carry replay_of = d.ID. The event is the same
// (the activity sends its stored body, with its id), the endpoint's
// settings are today's; a deleted endpoint is a conflict. A start that
// fails uses up its n.
func (r *Replayer) Replay(ctx context.Context, d *models.WebhookDelivery) (workflowID, runID string, err error) {
	endpoint, err := r.Store.GetEndpoint(ctx, d.TenantID, d.EndpointID)
	if errors.Is(err, models.ErrNotFound) {
		return "", "", models.Errorf(models.KindConflict, "the endpoint of this delivery was deleted")
	}
	if err != nil {
		return "", "", fmt.Errorf("replay of delivery %s: %w", d.ID, err)
	}
	event, err := r.Store.GetEvent(ctx, d.TenantID, d.EventID)
	if err != nil {
		return "", "", fmt.Errorf("replay of delivery %s: %w", d.ID, err)
	}
	in, err := deliveryInput(event, endpoint, r.Policy, d.ID)
	if err != nil {
		return "", "", fmt.Errorf("replay of delivery %s: %w", d.ID, err)
	}
	_, id, err := r.Store.NextReplay(ctx, event.ID, endpoint.ID, func(n int) string { return ReplayWorkflowID(event.ID, endpoint.ID, n) })
	if err != nil {
		return "", "", fmt.Errorf("replay of delivery %s: %w", d.ID, err)
	}
	// A replay continues the trace of the change that wrote the event.
	run, timedOut, err := startDelivery(ctx, r.Starter, event, id, r.TaskQueue, in, true)
	if err != nil {
		// The SDK retries an unreachable server until the deadline; a
		// client that never connected fails at once.
		var unavailable *serviceerror.Unavailable
		if errors.As(err, &unavailable) || timedOut {
			return "", "", models.Errorf(models.KindUnavailable, "Temporal did not answer; try the replay again later")
		}
		return "", "", fmt.Errorf("start replay %s: %w", id, err)
	}
	return run.GetID(), run.GetRunID(), nil
}

var _ activities.ReplayStarter = (*Replayer)(nil)

// StartReplay starts the delivery of ev to ep as the replay execution
// workflowID, whose attempts carry replay_of = replayOf: a recovery's
// replays (activities.ReplayStarter), their ids reserved by the caller. An
// execution of that id that exists already counts as started, so that a
// retried page starts nothing twice.
func (r *Replayer) StartReplay(ctx context.Context, ev *models.Event, ep *models.WebhookEndpoint, replayOf, workflowID string) error {
	in, err := deliveryInput(ev, ep, r.Policy, replayOf)
	if err != nil {
		return err
	}
	_, _, err = startDelivery(ctx, r.Starter, ev, workflowID, r.TaskQueue, in, true)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &already) {
		return fmt.Errorf("start replay %s: %w", workflowID, err)
	}
	return nil
}

// ReplayWorkflowID is the id of the n-th replay of an event to an
// endpoint (activities.ReplayStarter).
func (r *Replayer) ReplayWorkflowID(eventID, endpointID string, n int) string {
	return ReplayWorkflowID(eventID, endpointID, n)
}
