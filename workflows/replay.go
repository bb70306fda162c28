package workflows

import (
	"context"
	"fmt"

	"github.com/recordhub/recordhub/models"
)

// ReplayStore reserves replay numbers; *models.Store is one.
type ReplayStore interface {
	NextReplay(ctx context.Context, eventID, endpointID string, workflowID func(n int) string) (int, string, error)
}

var _ ReplayStore = (*models.Store)(nil)

// Replay sends the event of delivery attempt d to its endpoint again, as a
// new Delivery execution with id ReplayWorkflowID(event, endpoint, n) for
// the next n, whose attempts carry replay_of = d.ID. The event is the same
// (the activity sends its stored body, with its id), the endpoint's
// settings are today's. A start that fails uses up its n.
func Replay(ctx context.Context, starter Starter, store ReplayStore, d *models.WebhookDelivery, endpoint *models.WebhookEndpoint, event *models.Event, policy RetryPolicy) (workflowID, runID string, err error) {
	if d.EventID != event.ID || d.EndpointID != endpoint.ID || d.TenantID != event.TenantID {
		return "", "", fmt.Errorf("replay of delivery %s: given event %s and endpoint %s are not its own", d.ID, event.ID, endpoint.ID)
	}
	in, err := deliveryInput(event, endpoint, policy, d.ID)
	if err != nil {
		return "", "", fmt.Errorf("replay of delivery %s: %w", d.ID, err)
	}
	_, id, err := store.NextReplay(ctx, event.ID, endpoint.ID, func(n int) string { return ReplayWorkflowID(event.ID, endpoint.ID, n) })
	if err != nil {
		return "", "", fmt.Errorf("replay of delivery %s: %w", d.ID, err)
	}
	run, err := starter.ExecuteWorkflow(ctx, startOptions(id, in), Delivery, in)
	if err != nil {
		return "", "", fmt.Errorf("start replay %s: %w", id, err)
	}
	return run.GetID(), run.GetRunID(), nil
}
