package activities

import (
	"context"

	"go.temporal.io/sdk/temporal"
)

// SettleInput names a delivery whose last attempt never recorded its
// outcome. The workflow passes its own execution's ids, so that the
// activity reads nothing from Temporal and runs as well outside it.
type SettleInput struct {
	TenantID   string `json:"tenant_id"`
	EventID    string `json:"event_id"`
	EndpointID string `json:"endpoint_id"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// SettleDelivery ends a delivery whose last attempt timed out without a
// word (its worker died, or hung past the attempt's timeout): no later
// attempt will mark that attempt's row, and the attempt never reached the
// point where health is counted. It marks the run's rows still in flight
// worker_lost and, when it changed any, counts one failed delivery in the
// endpoint's health. A second call finds nothing in flight and counts
// nothing, so Temporal may retry it.
//
// A health update that fails is logged as an error, not returned, as in Attempt: the
// rows are settled by then, so a retry would count nothing anyway.
func (d *Deliverer) SettleDelivery(ctx context.Context, in SettleInput) error {
	n, err := d.store.SettleLostAttempts(ctx, in.EventID, in.EndpointID, in.WorkflowID, in.RunID, d.now())
	if err != nil {
		return temporal.NewApplicationErrorWithCause(err.Error(), ErrTypeStore, err)
	}
	if n == 0 {
		return nil
	}
	if err := d.store.RecordDeliveryEnd(ctx, in.TenantID, in.EndpointID, false, d.now(), d.disableAfter); err != nil {
		d.log.ErrorContext(ctx, "record endpoint health", "tenant_id", in.TenantID, "endpoint_id", in.EndpointID, "event_id", in.EventID, "error", err)
	}
	return nil
}
