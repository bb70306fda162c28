package api

import (
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
