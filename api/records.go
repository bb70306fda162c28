package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// it (moduleAccess), answering the refusal itself.
func (s *Server) moduleFor(c *gin.Context, action string) (*models.Module, bool) {
	cl := callOf(c)
	id := c.Param("id")
	cl.moduleID = id
	m, err := s.moduleAccess(c.Request.Context(), cl.key, id, action)
	if err != nil {
		s.fail(c, err)
		return nil, false
	}
	return m, true
}

// moduleAccess loads module id of k's tenant and checks k may take action
// on it: another tenant's module is not found, exactly like a missing one,
// and the permission is checked only after the module is known to be the
// tenant's (a *forbiddenError).
func (s *Server) moduleAccess(ctx context.Context, k *models.APIKey, id, action string) (*models.Module, error) {
	m, err := s.store.GetModule(ctx, k.TenantID, id)
	if err != nil {
		return nil, err
	}
	if !k.Can(m.ID, action) {
		return nil, &forbiddenError{required: action}
	}
	return m, nil
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
	s.answerChange(c, recordChange{method: http.MethodPost, module: m, in: in})
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
	s.answerChange(c, recordChange{method: http.MethodPatch, module: m, recordID: c.Param("recordId"), in: in, ifMatch: ifMatch})
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
	s.answerChange(c, recordChange{method: http.MethodDelete, module: m, recordID: c.Param("recordId")})
}

// recordChange is one write of a record, checked and read but not yet
// applied: what a record route and an operation of a batch both run.
type recordChange struct {
	// method is POST (create), PATCH (merge patch) or DELETE.
	method   string
	module   *models.Module
	recordID string      // PATCH and DELETE
	in       recordInput // POST and PATCH
	ifMatch  *int64      // PATCH: the version the record must be at
}

// recordAnswer is what a record write answers, whether as a route's
// response or as a batch's item.
type recordAnswer struct {
	status         int
	etag, location string // empty when the answer has none
	body           any
}

// changeRecord applies ch with ctx, in ctx's transaction when it is in
// one: it does store work only, so that a batch may run it on SQLite's
// committer (models.Store.Atomically).
func (s *Server) changeRecord(ctx context.Context, ch recordChange) (recordAnswer, error) {
	switch ch.method {
	case http.MethodPost:
		r, err := s.store.CreateRecord(ctx, ch.module, ch.in.Fields, ch.in.CustomData)
		if err != nil {
			return recordAnswer{}, err
		}
		return createdAnswer(ch.module, r), nil
	case http.MethodPatch:
		r, _, err := s.store.UpdateRecord(ctx, ch.module, ch.recordID,
			models.RecordPatch{Fields: ch.in.Fields, CustomData: ch.in.CustomData}, ch.ifMatch)
		if err != nil {
			return recordAnswer{}, err
		}
		return recordAnswer{status: http.StatusOK, etag: etag(r.Version), body: recordOut(r)}, nil
	case http.MethodDelete:
		r, err := s.store.DeleteRecord(ctx, ch.module, ch.recordID)
		if err != nil {
			return recordAnswer{}, err
		}
		return recordAnswer{status: http.StatusOK, body: deletedJSON{ID: r.ID, Deleted: true}}, nil
	}
	return recordAnswer{}, fmt.Errorf("change record: no change of method %s", ch.method)
}

// applyChanges applies chs in order with ctx, as changeRecord applies
// each, but a run of creates in one module together
// (models.Store.CreateRecords: three statements for the run instead of
// three a record). An error names the change that failed (*changeError).
func (s *Server) applyChanges(ctx context.Context, chs []recordChange) ([]recordAnswer, error) {
	answers := make([]recordAnswer, 0, len(chs))
	for i := 0; i < len(chs); {
		run := creates(chs[i:])
		if run < 2 {
			a, err := s.changeRecord(ctx, chs[i])
			if err != nil {
				return nil, &changeError{index: i, err: err}
			}
			answers = append(answers, a)
			i++
			continue
		}
		m := chs[i].module
		values := make([]models.RecordValues, run)
		for j, ch := range chs[i : i+run] {
			values[j] = models.RecordValues{Fields: ch.in.Fields, CustomData: ch.in.CustomData}
		}
		recs, err := s.store.CreateRecords(ctx, m, values)
		if item, ok := errors.AsType[*models.ItemError](err); ok {
			return nil, &changeError{index: i + item.Index, err: item.Err}
		}
		if err != nil {
			return nil, &changeError{index: i, err: err}
		}
		for _, r := range recs {
			answers = append(answers, createdAnswer(m, r))
		}
		i += run
	}
	return answers, nil
}

// creates is how many changes chs starts with that create records in one
// module.
func creates(chs []recordChange) int {
	n := 0
	for n < len(chs) && chs[n].method == http.MethodPost && chs[n].module.ID == chs[0].module.ID {
		n++
	}
	return n
}

// changeError is the error of the change index of several (applyChanges).
type changeError struct {
	index int
	err   error
}

func (e *changeError) Error() string { return fmt.Sprintf("change %d: %v", e.index, e.err) }

func (e *changeError) Unwrap() error { return e.err }

func createdAnswer(m *models.Module, r *models.Record) recordAnswer {
	return recordAnswer{
		status: http.StatusCreated, etag: etag(r.Version),
		location: "/api/modules/" + m.ID + "/records/" + r.ID, body: recordOut(r),
	}
}

// answerChange applies ch and answers it, or its error.
func (s *Server) answerChange(c *gin.Context, ch recordChange) {
	a, err := s.changeRecord(c.Request.Context(), ch)
	if err != nil {
		s.fail(c, err)
		return
	}
	out, err := renderedAnswer(c.Request.Context(), a)
	if err != nil {
		s.fail(c, err)
		return
	}
	for k, v := range out.Header {
		c.Header(k, v)
	}
	c.Data(out.Status, out.Header["Content-Type"], out.Body)
}

// jsonContentType is the Content-Type of a JSON answer, as gin's c.JSON
// sets it.
const jsonContentType = "application/json; charset=utf-8"

// render is a's answer as sent: a create's answer is rendered before its
// record is stored, to be stored with it (keyedCreate), and must be the
// one answerChange then sends, byte for byte.
func (a recordAnswer) render() (models.IdempotentAnswer, error) {
	// Appended as a batch's items are (appendAnswerBody), which writes
	// what json.Marshal writes.
	body, ok := appendAnswerBody(make([]byte, 0, 512), a.body)
	if !ok {
		var err error
		if body, err = json.Marshal(a.body); err != nil {
			return models.IdempotentAnswer{}, fmt.Errorf("encode answer: %w", err)
		}
	}
	h := map[string]string{"Content-Type": jsonContentType}
	if a.location != "" {
		h["Location"] = a.location
	}
	if a.etag != "" {
		h["ETag"] = a.etag
	}
	return models.IdempotentAnswer{Status: a.status, Header: h, Body: body}, nil
}

// renderedAnswer is a's answer as sent: a keyed create's was rendered
// before its record was inserted, and stored (models.KeyedCreate), and is
// sent as stored. The Location, which names the record, tells that the
// answer rendered is a's.
func renderedAnswer(ctx context.Context, a recordAnswer) (models.IdempotentAnswer, error) {
	if k := models.KeyedCreateOf(ctx); k != nil && k.Rendered() != nil && a.location != "" && k.Rendered().Header["Location"] == a.location {
		return *k.Rendered(), nil
	}
	return a.render()
}

// renderCreated is the answer of a record's create, rendered before the
// record is inserted (models.KeyedCreate.Render).
func renderCreated(r *models.Record) (models.IdempotentAnswer, error) {
	return createdAnswer(&models.Module{ID: r.ModuleID}, r).render()
}
