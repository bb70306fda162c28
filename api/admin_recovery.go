package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Recoverer starts bulk recoveries of an endpoint's failed deliveries
// (one workflow each); workflows.Recoveries is one.
type Recoverer interface {
	// StartRecovery starts a recovery of the deliveries started from since until
	// until (nil: now), as one workflow.
	StartRecovery(ctx context.Context, tenantID, endpointID string, since time.Time, until *time.Time) (*models.WebhookRecovery, error)
	// CheckRecovery answers a running recovery as it really is: failed
	// when its workflow never started or ended without recording it.
	CheckRecovery(ctx context.Context, r *models.WebhookRecovery) (*models.WebhookRecovery, error)
}

// adminRecoverEndpoint starts a recovery: 202 with its id and workflow id;
// its progress is at the status route.
func (s *Server) adminRecoverEndpoint(c *gin.Context) {
	var in recoveryInput
	if !s.readJSON(c, &in, false) {
		return
	}
	// Fields of the body are validated like any body (422, per field).
	var errs []models.FieldError
	since, msg := bodyTime(in.Since)
	if since == nil && msg == "" {
		msg = "is required"
	}
	if msg != "" {
		errs = append(errs, models.FieldError{Field: "since", Message: msg})
	}
	until, msg := bodyTime(in.Until)
	if msg != "" {
		errs = append(errs, models.FieldError{Field: "until", Message: msg})
	}
	if since != nil && !since.Before(s.now()) {
		errs = append(errs, models.FieldError{Field: "since", Message: "must be in the past"})
	}
	if since != nil && until != nil && !since.Before(*until) {
		errs = append(errs, models.FieldError{Field: "until", Message: "must be after since"})
	}
	if len(errs) > 0 {
		s.fail(c, models.ValidationError(errs))
		return
	}
	if !s.bulkCanStart(c, s.recoverer != nil) {
		return
	}
	rec, err := s.recoverer.StartRecovery(c.Request.Context(), tenantOf(c), c.Param("id"), *since, until)
	startedBulk(s, c, "recoveries", rec, err,
		func(base errorBody, running *models.BulkJob) any {
			return recoveryConflictBody{errorBody: base, RecoveryID: running.ID, WorkflowID: running.WorkflowID}
		},
		func(rec *models.WebhookRecovery) recoveryStartedJSON {
			return recoveryStartedJSON{RecoveryID: rec.ID, WorkflowID: rec.WorkflowID}
		})
}

func (s *Server) adminGetRecovery(c *gin.Context) {
	var check func(context.Context, *models.WebhookRecovery) (*models.WebhookRecovery, error)
	if s.recoverer != nil {
		check = s.recoverer.CheckRecovery
	}
	getBulk(s, c, models.BulkRecovery, s.store.GetRecovery, check, recoveryOut)
}

// bodyTime parses a time value of a JSON body (models.ParseTime): nil when
// absent, else the time or why it is not one.
func bodyTime(v *string) (*time.Time, string) {
	if v == nil || *v == "" {
		return nil, ""
	}
	t, err := models.ParseTime(*v)
	if err != nil {
		return nil, err.Error()
	}
	return &t, ""
}
