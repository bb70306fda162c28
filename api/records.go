package api

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// listModules answers the modules the key holds any permission on, each
// with the key's permissions there.
func (s *Server) listModules(c *gin.Context) {
	k := callOf(c).key
	mods, err := s.store.ListModules(c.Request.Context(), k.TenantID)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := list[moduleJSON]{Data: []moduleJSON{}}
	for i := range mods {
		acts := k.Actions(mods[i].ID)
		if len(acts) == 0 {
			continue
		}
		m := moduleOut(&mods[i])
		m.Permissions = acts
		out.Data = append(out.Data, m)
	}
	out.Total = int64(len(out.Data))
	c.JSON(http.StatusOK, out)
}

// moduleFor loads the path's module and checks the key may take action on
// it: another tenant's module is 404, exactly like a missing one, and the
// permission is checked only after the module is known to be the tenant's.
func (s *Server) moduleFor(c *gin.Context, action string) (*models.Module, bool) {
	cl := callOf(c)
	id := c.Param("id")
	cl.moduleID = id
	m, err := s.store.GetModule(c.Request.Context(), cl.key.TenantID, id)
	if err != nil {
		s.fail(c, err)
		return nil, false
	}
	if !cl.key.Can(m.ID, action) {
		forbidden(c, action)
		return nil, false
	}
	return m, true
}

// checkModuleAccess answers 404 or 403 for a key that lacks action on the
// path's module; it is the slow path of handlers that skip loading the
// module when the key holds the permission.
func (s *Server) checkModuleAccess(c *gin.Context, action string) bool {
	cl := callOf(c)
	cl.moduleID = c.Param("id")
	if cl.key.Can(cl.moduleID, action) {
		return true
	}
	_, ok := s.moduleFor(c, action)
	return ok
}

func (s *Server) listRecords(c *gin.Context) {
	m, ok := s.moduleFor(c, models.ActionRead)
	if !ok {
		return
	}
	page, err := pageOf(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	q := models.RecordQuery{Page: page, Sort: c.Query("sort")}
	if q.Sort == "" {
		q.Sort = models.DefaultRecordSort
	}
	if !models.ValidRecordSort(q.Sort) {
		s.fail(c, invalid("sort must be one of created_at, -created_at, updated_at, -updated_at"))
		return
	}
	if err := recordFilters(m, c.Request.URL.Query(), &q); err != nil {
		s.fail(c, err)
		return
	}
	recs, total, err := s.store.ListRecords(c.Request.Context(), m, q)
	if err != nil {
		s.fail(c, err)
		return
	}
	writeRecordViews(c, recs, &list[recordJSON]{Total: total, Page: page.Page, Limit: page.Limit})
}

// recordFilters reads the filter parameters of a records list into q:
// filter[<field>]=<value> and filter[<field>][<op>]=<value> on a field of
// m, or on created_at and updated_at when m has no field of that name.
// Several operators on one field must all hold.
func recordFilters(m *models.Module, query url.Values, q *models.RecordQuery) error {
	for _, param := range slices.Sorted(maps.Keys(query)) {
		if !strings.HasPrefix(param, "filter[") {
			continue
		}
		name, op, ok := filterParam(param)
		if !ok {
			return invalid("%s: a filter is filter[<field>] or filter[<field>][<op>]", param)
		}
		raw := query[param][0]
		f, known := m.Field(name)
		if !known && (name == "created_at" || name == "updated_at") {
			at, err := timeOperand(param, op, raw)
			if err != nil {
				return err
			}
			q.Times = append(q.Times, models.TimeCond{Column: name, Op: op, At: at})
			continue
		}
		if !known {
			return invalid("%s: the module has no field %q", param, name)
		}
		v, err := filterOperand(f, param, op, raw)
		if err != nil {
			return err
		}
		if q.Filters == nil {
			q.Filters = map[string]any{}
		}
		ops, _ := q.Filters[name].(map[string]any)
		if ops == nil {
			ops = map[string]any{}
			q.Filters[name] = ops
		}
		if _, dup := ops[op]; dup {
			return invalid("%s: filter[%s] and filter[%s][eq] are one condition; send one", param, name, name)
		}
		ops[op] = v
	}
	return nil
}

func (s *Server) getRecord(c *gin.Context) {
	if !s.checkModuleAccess(c, models.ActionRead) {
		return
	}
	r, err := s.store.GetRecord(c.Request.Context(), tenantOf(c), c.Param("id"), c.Param("recordId"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("ETag", etag(r.Version))
	writeRecordViews(c, []models.RecordView{*r}, nil)
}

func writeRecord(c *gin.Context, status int, r *models.Record) {
	c.Header("ETag", etag(r.Version))
	c.JSON(status, recordOut(r))
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

func (s *Server) createRecord(c *gin.Context) {
	m, ok := s.moduleFor(c, models.ActionWrite)
	if !ok {
		return
	}
	var in recordInput
	if !s.readJSON(c, &in, false) {
		return
	}
	r, err := s.store.CreateRecord(c.Request.Context(), m, in.Fields, in.CustomData)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Location", "/api/modules/"+m.ID+"/records/"+r.ID)
	writeRecord(c, http.StatusCreated, r)
}

func (s *Server) updateRecord(c *gin.Context) {
	m, ok := s.moduleFor(c, models.ActionWrite)
	if !ok {
		return
	}
	ifMatch, err := parseIfMatch(c.GetHeader("If-Match"))
	if err != nil {
		s.fail(c, err)
		return
	}
	var in recordInput
	if !s.readJSON(c, &in, false) {
		return
	}
	r, _, err := s.store.UpdateRecord(c.Request.Context(), m, c.Param("recordId"),
		models.RecordPatch{Fields: in.Fields, CustomData: in.CustomData}, ifMatch)
	if err != nil {
		s.fail(c, err)
		return
	}
	writeRecord(c, http.StatusOK, r)
}

// parseIfMatch reads If-Match: "<version>" (a weak W/ tag and a bare number
// are accepted too); "*" or no header sets no condition. A tag that cannot
// be a version matches nothing.
func parseIfMatch(h string) (*int64, error) {
	h = strings.TrimSpace(h)
	if h == "" || h == "*" {
		return nil, nil
	}
	v := strings.Trim(strings.TrimPrefix(h, "W/"), `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return nil, models.Errorf(models.KindPrecondition, "If-Match %s does not name a record version", h)
	}
	return &n, nil
}

func (s *Server) deleteRecord(c *gin.Context) {
	m, ok := s.moduleFor(c, models.ActionDelete)
	if !ok {
		return
	}
	r, err := s.store.DeleteRecord(c.Request.Context(), m, c.Param("recordId"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, deletedJSON{ID: r.ID, Deleted: true})
}
