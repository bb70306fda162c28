package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

func (s *Server) adminAccessLogs(c *gin.Context) {
	page, err := cursorPageOf(c, listAccessLogs)
	if err != nil {
		s.fail(c, err)
		return
	}
	q := models.AccessLogQuery{Page: page.query(), After: page.After, CountUpTo: maxCounted, KeyID: c.Query("key_id"), Method: strings.ToUpper(c.Query("method"))}
	if v := c.Query("status"); v != "" {
		if q.Status, err = strconv.Atoi(v); err != nil || q.Status < 100 || q.Status > 599 {
			s.fail(c, invalid("status must be an HTTP status code"))
			return
		}
	}
	if q.From, err = timeParam(c, "from"); err != nil {
		s.fail(c, err)
		return
	}
	if q.To, err = timeParam(c, "to"); err != nil {
		s.fail(c, err)
		return
	}
	logs, total, err := s.store.ListAccessLogs(c.Request.Context(), tenantOf(c), q)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, pageOut(listAccessLogs, page, logs, total, accessLogPosition, accessLogOut))
}

// accessLogPosition is a call's place in the access log.
func accessLogPosition(l *models.AccessLog) models.Position {
	return models.Position{At: l.CreatedAt, ID: l.ID}
}

// adminKeyUsage answers a key's usage by hour or day (UTC). Without from
// and to it covers the last 24 hours by hour, or the last 30 days by day.
func (s *Server) adminKeyUsage(c *gin.Context) {
	tenant := tenantOf(c)
	k, err := s.store.GetKey(c.Request.Context(), tenant, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	gran := c.DefaultQuery("granularity", "hour")
	if gran != "hour" && gran != "day" {
		s.fail(c, invalid("granularity must be hour or day"))
		return
	}
	unit := time.Hour
	span := 24 * time.Hour
	if gran == "day" {
		unit, span = 24*time.Hour, 30*24*time.Hour
	}
	to, err := timeParam(c, "to")
	if err != nil {
		s.fail(c, err)
		return
	}
	from, err := timeParam(c, "from")
	if err != nil {
		s.fail(c, err)
		return
	}
	end := s.now().UTC().Truncate(unit).Add(unit)
	if to != nil {
		end = to.UTC()
	}
	start := end.Add(-span).Truncate(unit)
	if start.Year() < 1 {
		// A default window before year 1 starts there: no time outside
		// years 1..9999 is answered either.
		start = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if from != nil {
		start = from.UTC().Truncate(unit)
	}
	if !start.Before(end) {
		s.fail(c, invalid("from must be before to"))
		return
	}
	buckets, err := s.store.KeyUsageBuckets(c.Request.Context(), tenant, k.ID, gran == "day", start, end)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := usageList{list: list[usageJSON]{Data: make([]usageJSON, len(buckets)), Total: int64(len(buckets))}, Summary: usageSummaryJSON{From: start, To: end, Granularity: gran}}
	for i, b := range buckets {
		out.Data[i] = usageJSON(b)
		out.Summary.Requests += b.Requests
		out.Summary.Errors += b.Errors
		out.Summary.RateLimited += b.RateLimited
	}
	c.JSON(http.StatusOK, out)
}
