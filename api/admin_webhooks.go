package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Replayer starts a new delivery of an attempt's event to its endpoint.
type Replayer interface {
	Replay(ctx context.Context, d *models.WebhookDelivery) (workflowID, runID string, err error)
}

// addModules names the modules of each endpoint in out. Modules are read
// through the store's cache, so this costs no query once they are warm; an
// id whose module was deleted is left out of modules (module_ids keeps it).
func (s *Server) addModules(ctx context.Context, tenantID string, out ...*endpointJSON) error {
	for _, e := range out {
		e.Modules = make([]moduleRefJSON, 0, len(e.ModuleIDs))
		for _, id := range e.ModuleIDs {
			m, err := s.store.GetModule(ctx, tenantID, id)
			if errors.Is(err, models.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			e.Modules = append(e.Modules, moduleRefOut(m))
		}
	}
	return nil
}

// includeStats reads include: "stats" asks for each endpoint's stats, no
// other value is known.
func includeStats(c *gin.Context) (bool, error) {
	switch c.Query("include") {
	case "":
		return false, nil
	case "stats":
		return true, nil
	}
	return false, invalid("include must be stats")
}

// addStats adds each endpoint's stats over the last 24 UTC hours (the
// current one included), in one read of their hourly rollups.
func (s *Server) addStats(c *gin.Context, tenantID string, out []endpointJSON) error {
	ids := make([]string, len(out))
	for i := range out {
		ids[i] = out[i].ID
	}
	stats, err := s.store.EndpointStatsAt(c.Request.Context(), tenantID, ids, s.now())
	if err != nil {
		return err
	}
	for i := range out {
		out[i].Stats = statsOut(stats[out[i].ID])
	}
	return nil
}

// checkURL is the subscription-time egress check; without one configured
// every URL is refused, never allowed.
func (s *Server) checkURL(ctx context.Context, rawURL string) error {
	if s.urlCheck == nil {
		return models.Errorf(models.KindInvalidURL, "outbound webhooks are not configured")
	}
	return s.urlCheck(ctx, rawURL)
}

func (s *Server) adminCreateEndpoint(c *gin.Context) {
	var in endpointInput
	if !s.readJSON(c, &in, false) {
		return
	}
	if in.URL == nil {
		s.fail(c, models.ValidationError([]models.FieldError{{Field: "url", Message: "is required"}}))
		return
	}
	mi, err := in.model()
	if err == nil {
		err = s.throttleHeld(mi)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	e, secret, err := s.store.CreateEndpoint(c.Request.Context(), tenantOf(c), mi, s.checkURL)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := endpointOut(e, s.now())
	out.Secret = secret
	if err := s.addModules(c.Request.Context(), tenantOf(c), &out); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}

func (s *Server) adminListEndpoints(c *gin.Context) {
	page, err := pageOf(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	stats, err := includeStats(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	eps, total, err := s.store.ListEndpoints(c.Request.Context(), tenantOf(c), page)
	if err != nil {
		s.fail(c, err)
		return
	}
	now := s.now()
	out := list[endpointJSON]{Data: make([]endpointJSON, len(eps)), Total: total, Page: page.Page, Limit: page.Limit}
	for i := range eps {
		out.Data[i] = endpointOut(&eps[i], now)
		if err := s.addModules(c.Request.Context(), tenantOf(c), &out.Data[i]); err != nil {
			s.fail(c, err)
			return
		}
	}
	if stats {
		if err := s.addStats(c, tenantOf(c), out.Data); err != nil {
			s.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminGetEndpoint(c *gin.Context) {
	stats, err := includeStats(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	e, err := s.store.GetEndpoint(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := []endpointJSON{endpointOut(e, s.now())}
	if err := s.addModules(c.Request.Context(), tenantOf(c), &out[0]); err != nil {
		s.fail(c, err)
		return
	}
	if stats {
		if err := s.addStats(c, tenantOf(c), out); err != nil {
			s.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, out[0])
}

func (s *Server) adminUpdateEndpoint(c *gin.Context) {
	var in endpointInput
	if !s.readJSON(c, &in, false) {
		return
	}
	mi, err := in.model()
	if err == nil {
		err = s.throttleHeld(mi)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	e, err := s.store.UpdateEndpoint(c.Request.Context(), tenantOf(c), c.Param("id"), mi, s.checkURL)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := endpointOut(e, s.now())
	if err := s.addModules(c.Request.Context(), tenantOf(c), &out); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminDeleteEndpoint(c *gin.Context) {
	if err := s.store.DeleteEndpoint(c.Request.Context(), tenantOf(c), c.Param("id")); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, deletedJSON{ID: c.Param("id"), Deleted: true})
}

// adminEndpointSecret answers the signing secret, and during a rotation's
// grace the previous one, which still signs.
func (s *Server) adminEndpointSecret(c *gin.Context) {
	e, err := s.store.GetEndpoint(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	current, previous, err := s.store.EndpointSecrets(e)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := endpointSecretJSON{Secret: current}
	if previous != "" {
		out.PreviousSecret = previous
		out.PreviousSecretExpiresAt = e.PreviousSecretExpiresAt
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminRotateEndpointSecret(c *gin.Context) {
	var in graceInput
	if !s.readJSON(c, &in, true) {
		return
	}
	e, secret, err := s.store.RotateEndpointSecret(c.Request.Context(), tenantOf(c), c.Param("id"), in.GraceSeconds)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := endpointOut(e, s.now())
	out.Secret = secret
	if err := s.addModules(c.Request.Context(), tenantOf(c), &out); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminListDeliveries(c *gin.Context) {
	page, err := cursorPageOf(c, listDeliveries)
	if err != nil {
		s.fail(c, err)
		return
	}
	q := models.DeliveryQuery{Page: page.query(), After: page.After, CountUpTo: maxCounted, EndpointID: c.Query("endpoint_id"), EventID: c.Query("event_id"), EventType: c.Query("event_type"),
		RecordID: c.Query("record_id")}
	if v := c.Query("succeeded"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.fail(c, invalid("succeeded must be true or false"))
			return
		}
		q.Succeeded = &b
	}
	if q.Since, err = timeParam(c, "since"); err != nil {
		s.fail(c, err)
		return
	}
	if q.Until, err = timeParam(c, "until"); err != nil {
		s.fail(c, err)
		return
	}
	if q.Since != nil && q.Until != nil && !q.Since.Before(*q.Until) {
		s.fail(c, invalid("since must be before until"))
		return
	}
	if q.Error = c.Query("error"); q.Error != "" && !slices.Contains(models.DeliveryErrors, q.Error) {
		s.fail(c, invalid("error must be one of %s", strings.Join(models.DeliveryErrors, ", ")))
		return
	}
	ds, total, err := s.store.ListDeliveries(c.Request.Context(), tenantOf(c), q)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, pageOut(listDeliveries, page, ds, total, deliveryPosition, deliveryOut))
}

// deliveryPosition is an attempt's place in the deliveries list.
func deliveryPosition(d *models.WebhookDelivery) models.Position {
	return models.Position{At: d.StartedAt, ID: d.ID}
}

func (s *Server) adminGetDelivery(c *gin.Context) {
	d, err := s.store.GetDelivery(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, deliveryFullOut(d))
}

// adminReplayDelivery sends the attempt's event to its endpoint again as a
// new workflow execution, with the same body and event id.
func (s *Server) adminReplayDelivery(c *gin.Context) {
	d, err := s.store.GetDelivery(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	if s.replayer == nil {
		failCode(c, http.StatusServiceUnavailable, codeUnavailable, "webhook delivery is not running in this process")
		return
	}
	wid, rid, err := s.replayer.Replay(c.Request.Context(), d)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, replayJSON{WorkflowID: wid, RunID: rid})
}
