package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Resyncer starts resyncs of an endpoint (one workflow each);
// workflows.Resyncs is one.
type Resyncer interface {
	// StartResync starts a resync of the endpoint as one workflow.
	StartResync(ctx context.Context, tenantID, endpointID string) (*models.WebhookResync, error)
	// CheckResync answers a running resync as it really is: failed when
	// its workflow never started or ended without recording it.
	CheckResync(ctx context.Context, r *models.WebhookResync) (*models.WebhookResync, error)
}

// resyncJSON is a resync's status.
type resyncJSON struct {
	ID         string `json:"id"`
	EndpointID string `json:"endpoint_id"`
	WorkflowID string `json:"workflow_id"`
	// Position is the outbox position the snapshots are taken at, opaque.
	Position   string     `json:"position"`
	Status     string     `json:"status"`
	Total      int        `json:"total"`
	Examined   int        `json:"examined"`
	Sent       int        `json:"sent"`
	Covered    int        `json:"covered"`
	Error      *string    `json:"error"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// resyncConflictBody refuses a resync while another of the endpoint runs,
// naming it.
type resyncConflictBody struct {
	errorBody
	ResyncID   string `json:"resync_id"`
	WorkflowID string `json:"workflow_id"`
}

func resyncOut(r *models.WebhookResync) resyncJSON {
	out := resyncJSON{
		ID: r.ID, EndpointID: r.EndpointID, WorkflowID: r.WorkflowID, Position: r.Position, Status: r.Status,
		Total: r.Total, Examined: r.Examined, Sent: r.Sent, Covered: r.Covered, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
	}
	if r.Error != "" {
		out.Error = &r.Error
	}
	return out
}

// adminResyncEndpoint starts a resync: 202 with the resync as it starts;
// its progress is at the status route (Location).
func (s *Server) adminResyncEndpoint(c *gin.Context) {
	var in struct{}
	if !s.readJSON(c, &in, true) {
		return
	}
	if !s.bulkCanStart(c, s.resyncer != nil) {
		return
	}
	rs, err := s.resyncer.StartResync(c.Request.Context(), tenantOf(c), c.Param("id"))
	startedBulk(s, c, "resyncs", rs, err,
		func(base errorBody, running *models.BulkJob) any {
			return resyncConflictBody{errorBody: base, ResyncID: running.ID, WorkflowID: running.WorkflowID}
		},
		resyncOut)
}

func (s *Server) adminGetResync(c *gin.Context) {
	var check func(context.Context, *models.WebhookResync) (*models.WebhookResync, error)
	if s.resyncer != nil {
		check = s.resyncer.CheckResync
	}
	getBulk(s, c, models.BulkResync, s.store.GetResync, check, resyncOut)
}
