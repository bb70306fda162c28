package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// bulkConflictBody refuses a resync or a recovery of a tenant that runs as
// many as its bound, naming the setting and the running ones.
type bulkConflictBody struct {
	errorBody
	Setting string        `json:"setting"`
	Running []bulkRunJSON `json:"running"`
}

// bulkRunJSON is a running resync or recovery.
type bulkRunJSON struct {
	Kind       string `json:"kind"`
	ID         string `json:"id"`
	EndpointID string `json:"endpoint_id"`
	WorkflowID string `json:"workflow_id"`
}

// refuseTenantBulk answers 409 when err is a *models.TenantBulkError, and
// reports whether it did.
func refuseTenantBulk(c *gin.Context, err error) bool {
	var busy *models.TenantBulkError
	if !errors.As(err, &busy) {
		return false
	}
	body := bulkConflictBody{
		errorBody: errorBody{Error: string(models.KindConflict), Message: busy.Error(), RequestID: requestID(c), Limit: busy.Max},
		Setting:   models.BulkRunningSetting,
		Running:   make([]bulkRunJSON, len(busy.Running)),
	}
	for i, r := range busy.Running {
		body.Running[i] = bulkRunJSON{Kind: r.Kind, ID: r.ID, EndpointID: r.EndpointID, WorkflowID: r.WorkflowID}
	}
	c.AbortWithStatusJSON(http.StatusConflict, body)
	return true
}

// bulkRow is a resync's or a recovery's row.
type bulkRow interface {
	Job() *models.BulkJob
}

// getBulk answers the status of a resync or a recovery (kind) that load
// reads: the row as stored, or, while it says it runs, as check finds its
// workflow. A nil check (no delivery in this process) and a Temporal
// that does not answer leave the row as stored, a fair answer then. The
// job's id is the route's kind+"Id" parameter (recoveryId, resyncId).
func getBulk[R bulkRow, J any](s *Server, c *gin.Context, kind string, load func(ctx context.Context, tenantID, endpointID, id string) (R, error),
	check func(ctx context.Context, row R) (R, error), out func(R) J) {
	ctx := c.Request.Context()
	row, err := load(ctx, tenantOf(c), c.Param("id"), c.Param(kind+"Id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if job := row.Job(); job.Status == models.RecoveryRunning && check != nil {
		if checked, err := check(ctx, row); err != nil {
			s.log.WarnContext(ctx, "check "+kind, kind, job.ID, "err", err)
		} else {
			row = checked
		}
	}
	c.JSON(http.StatusOK, out(row))
}

// bulkCanStart reports whether a resync or a recovery of the endpoint in
// the path may be asked of this process (ready: it runs delivery), and
// answers the request when not. The endpoint is looked up first: a foreign
// id is a 404 wherever the job would run.
func (s *Server) bulkCanStart(c *gin.Context, ready bool) bool {
	if _, err := s.store.GetEndpoint(c.Request.Context(), tenantOf(c), c.Param("id")); err != nil {
		s.fail(c, err)
		return false
	}
	if !ready {
		failCode(c, http.StatusServiceUnavailable, codeUnavailable, "webhook delivery is not running in this process")
		return false
	}
	return true
}

// startedBulk answers the start of a resync or a recovery: a refusal is a
// 409 naming what runs (conflict makes the body that names the endpoint's
// running job), another error is answered as any, and a start is a 202
// with started's body and the job's status route, under path ("resyncs",
// "recoveries"), in Location.
func startedBulk[R bulkRow, J any](s *Server, c *gin.Context, path string, row R, err error, conflict func(errorBody, *models.BulkJob) any, started func(R) J) {
	if refuseTenantBulk(c, err) {
		return
	}
	var running interface {
		error
		RunningJob() *models.BulkJob
	}
	if errors.As(err, &running) {
		base := errorBody{Error: string(models.KindConflict), Message: running.Error(), RequestID: requestID(c)}
		c.AbortWithStatusJSON(http.StatusConflict, conflict(base, running.RunningJob()))
		return
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	job := row.Job()
	c.Header("Location", "/api/admin/webhook-endpoints/"+job.EndpointID+"/"+path+"/"+job.ID)
	c.JSON(http.StatusAccepted, started(row))
}
