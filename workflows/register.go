package workflows

import (
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
)

// Register registers the Delivery workflow and d's activities (Attempt)
// with a worker polling the deliveries' task queue.
func Register(w worker.Registry, d *activities.Deliverer) {
	w.RegisterWorkflow(Delivery)
	w.RegisterActivity(d)
}
