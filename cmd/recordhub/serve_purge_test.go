//go:build !noembedtemporal

package main

import (
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// checkPurgeSchedule checks, on a running role-all service with the
// embedded server, that the worker created the hourly purge schedule
// starting the Purge workflow on its task queue, and that a run it starts
// (triggered now rather than in an hour) completes.
func checkPurgeSchedule(t *testing.T, cfg Config) {
	t.Helper()
	ctx := t.Context()
	c, err := client.Dial(client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", cfg.TemporalPort), Namespace: cfg.TemporalNamespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := workflows.PurgeScheduleIDFor(cfg.TemporalTaskQueue)
	h := c.ScheduleClient().GetHandle(ctx, id)
	desc, err := h.Describe(ctx)
	if err != nil {
		t.Fatalf("describe schedule %s: %v", id, err)
	}
	if iv := desc.Schedule.Spec.Intervals; len(iv) != 1 || iv[0].Every != time.Hour {
		t.Errorf("schedule intervals %+v, want every hour", iv)
	}
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	if !ok || action.Workflow != workflows.PurgeWorkflowName || action.TaskQueue != cfg.TemporalTaskQueue {
		t.Fatalf("schedule action %+v, want the %s workflow on %s", desc.Schedule.Action, workflows.PurgeWorkflowName, cfg.TemporalTaskQueue)
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	var started *client.ScheduleWorkflowExecution
	storetest.Eventually(t, 30*time.Second, "the triggered purge to start", func() bool {
		d, err := h.Describe(ctx)
		if err != nil || len(d.Info.RecentActions) == 0 {
			return false
		}
		started = d.Info.RecentActions[0].StartWorkflowResult
		return started != nil
	})
	var out workflows.PurgeWorkflowOutput
	if err := c.GetWorkflow(ctx, started.WorkflowID, started.FirstExecutionRunID).Get(ctx, &out); err != nil {
		t.Fatalf("purge run %s: %v", started.WorkflowID, err)
	}
	if len(out.Kinds) != 4 {
		t.Errorf("purge result %+v: want one entry per kind", out)
	}
}
