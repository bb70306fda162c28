package workflows

import (
	"strconv"
	"strings"
)

// DefaultTaskQueue is the task queue of delivery workflows and their
// activities unless RECORDHUB_TEMPORAL_TASK_QUEUE names another: two
// deployments sharing a namespace must use different queues, or each one's
// workers would run the other's deliveries against the wrong database.
const DefaultTaskQueue = "recordhub-webhooks"

// workflowIDPrefix starts every delivery workflow id.
const workflowIDPrefix = "webhook-delivery/"

// WorkflowID is the id of the delivery of an event to an endpoint. It is
// derived from the pair alone, so that starting it again (after a crash
// between the start and the outbox's bookkeeping, or from a second
// dispatcher) is refused instead of sending twice.
func WorkflowID(eventID, endpointID string) string {
	return workflowIDPrefix + eventID + "/" + endpointID
}

// ReplayWorkflowID is the id of the n-th replay (n ≥ 1) of an event to an
// endpoint; n comes from models.Store.NextReplay.
func ReplayWorkflowID(eventID, endpointID string, n int) string {
	return WorkflowID(eventID, endpointID) + "/replay-" + strconv.Itoa(n)
}

// validID reports whether an event or endpoint id can be part of a workflow
// id without making two pairs share one: ids are generated with a prefix
// and never contain a slash.
func validID(id string) bool { return id != "" && !strings.Contains(id, "/") }
