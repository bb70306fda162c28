package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// MaxBatchOps bounds the operations of one batch (POST /api/batch).
const MaxBatchOps = 100

// batch applies 1 to MaxBatchOps record writes, each as its record route
// would, in one transaction: all of them, with their events, or none.
//
// Everything that is not store work is done before the transaction, in
// this order, each refusal naming its operation: the form of every
// operation, then each one's module and permission, then the key's budget
// (one request per operation, beside the one the call itself took). On
// SQLite the transaction runs on the goroutine that commits every write
// of the process (models.Store.Atomically), which must not wait on a
// limiter or a request body.
func (s *Server) batch(c *gin.Context) {
	body, ok := s.readJSONBody(c, false)
	if !ok {
		return
	}
	ops, at, err := readBatch(body)
	if err != nil {
		if at < 0 {
			s.fail(c, err)
		} else {
			s.failAt(c, at, err)
		}
		return
	}
	ctx := c.Request.Context()
	k := callOf(c).key
	changes := make([]recordChange, len(ops))
	var changed []string
	for i, op := range ops {
		m, err := s.moduleAccess(ctx, k, op.moduleID, actionOf(op.method))
		if err != nil {
			s.failAt(c, i, err)
			return
		}
		changes[i] = recordChange{method: op.method, module: m, recordID: op.recordID, in: op.in, ifMatch: op.ifMatch}
		if op.recordID != "" {
			changed = append(changed, op.recordID)
		}
	}
	if !s.takeBatchBudget(c, len(ops)) {
		return
	}
	var answers []recordAnswer
	err = s.store.Atomically(ctx, func(ctx context.Context) error {
		// Before the first write: see models.Store.LockForChange.
		if err := s.store.LockForChange(ctx, changed...); err != nil {
			return err
		}
		var err error
		answers, err = s.applyChanges(ctx, changes)
		return err
	})
	if chErr, ok := errors.AsType[*changeError](err); ok {
		s.failAt(c, chErr.index, chErr.err)
		return
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	writeBatchAnswers(c, answers)
}

// writeBatchAnswers answers a batch's applied operations: appended
// (appendBatchItems), or by c.JSON when one holds what that does not
// write, which encodes them alike.
func writeBatchAnswers(c *gin.Context, answers []recordAnswer) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b, ok := appendBatchItems((*bp)[:0], answers)
	*bp = b
	if ok {
		c.Render(http.StatusOK, appendedJSON(b))
		return
	}
	items := make([]batchItemJSON, len(answers))
	for i, a := range answers {
		items[i] = batchItemOut(a)
	}
	c.JSON(http.StatusOK, items)
}

// appendedJSON renders JSON already written as c.JSON renders what it
// encodes: c.Data would add a Content-Length, which c.JSON does not set,
// and so change how a large answer is framed.
type appendedJSON []byte

func (j appendedJSON) Render(w http.ResponseWriter) error {
	j.WriteContentType(w)
	_, err := w.Write(j)
	return err
}

func (j appendedJSON) WriteContentType(w http.ResponseWriter) {
	if h := w.Header(); len(h["Content-Type"]) == 0 {
		h["Content-Type"] = []string{jsonContentType}
	}
}

// takeBatchBudget takes n requests of the key's budget at once, for a
// batch's n operations, answering 429 and reporting false when they do not
// fit: then none is taken, and nothing is applied. A limiter that fails
// lets the batch through, as it lets a call through (rateLimit).
func (s *Server) takeBatchBudget(c *gin.Context, n int) bool {
	k := callOf(c).key
	res, err := s.limiter.AllowN(c.Request.Context(), limitKey(k), k.RateLimitPerMinute, n)
	if err != nil {
		s.limiterFailed(c, err)
		return true
	}
	return s.applyLimit(c, res)
}

// readBatch reads a batch's operations from its body. It reads the whole
// body in one pass (quickBatch), and only a body that pass refuses a
// second time, an operation at a time, which names the one at fault: at
// is its index, or -1 when the fault is the batch's own.
func readBatch(body []byte) (ops []batchOp, at int, err error) {
	if ops, ok := quickBatch(body); ok {
		return ops, -1, nil
	}
	var in batchJSON
	if err := decodeStrict(body, &in); err != nil {
		return nil, -1, err
	}
	if n := len(in.Requests); n < 1 || n > MaxBatchOps {
		return nil, -1, invalid("requests holds %d operations; a batch holds 1 to %d", n, MaxBatchOps)
	}
	ops = make([]batchOp, len(in.Requests))
	for i, raw := range in.Requests {
		if ops[i], err = parseBatchOp(raw); err != nil {
			return nil, i, err
		}
	}
	return ops, -1, nil
}

// quickBatch reads a well-formed batch in one pass over its body, as
// decodeStrict would (numbers kept as written, unknown properties
// refused), and reports false for any body it does not take whole.
func quickBatch(body []byte) ([]batchOp, bool) {
	if bytes.Contains(body, []byte(`\u0000`)) {
		return nil, false
	}
	var in batchQuickJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if dec.Decode(&in) != nil || dec.More() {
		return nil, false
	}
	if n := len(in.Requests); n < 1 || n > MaxBatchOps {
		return nil, false
	}
	ops := make([]batchOp, len(in.Requests))
	for i, q := range in.Requests {
		kind := bodyNone
		if q.Body != nil {
			kind = bodyObject
		}
		op, err := newBatchOp(q.Method, q.URL, kind, q.Headers)
		if err != nil || q.Method == "" {
			return nil, false
		}
		if q.Body != nil {
			op.in = *q.Body
		}
		ops[i] = op
	}
	return ops, true
}

// batchOp is an operation of a batch as read from its JSON, before its
// module is loaded.
type batchOp struct {
	method             string
	moduleID, recordID string
	in                 recordInput
	ifMatch            *int64
}

// batchURLForm is what an operation's url must look like.
const batchURLForm = "/api/modules/<module id>/records for a POST, /api/modules/<module id>/records/<record id> for a PATCH or DELETE"

// parseBatchOp reads one operation of a batch: its method and url must
// name a record route that writes, and its body and headers be what that
// route takes. Path ids are refused as the routes refuse them (checkParams,
// checkPathIDs), with 404.
func parseBatchOp(raw json.RawMessage) (batchOp, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return batchOp{}, invalid("an operation must be a JSON object of method, url, body and headers")
	}
	var in batchOpJSON
	if err := decodeStrict(raw, &in); err != nil {
		return batchOp{}, err
	}
	body := bytes.TrimSpace(in.Body)
	kind := bodyOther
	switch {
	case len(body) == 0 || string(body) == "null":
		kind = bodyNone
	case body[0] == '{':
		kind = bodyObject
	}
	op, err := newBatchOp(in.Method, in.URL, kind, in.Headers)
	if err != nil {
		return batchOp{}, err
	}
	if kind == bodyObject {
		if err := decodeStrict(body, &op.in); err != nil {
			return batchOp{}, err
		}
	}
	return op, nil
}

// What an operation's body is, for newBatchOp.
const (
	bodyNone   = iota // absent or null
	bodyObject        // a JSON object
	bodyOther
)

// newBatchOp checks an operation's method, url, kind of body and headers,
// and returns it without its body.
func newBatchOp(method, rawURL string, body int, headers map[string]string) (batchOp, error) {
	op := batchOp{method: method}
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodDelete:
	default:
		return batchOp{}, invalid("method must be POST, PATCH or DELETE")
	}
	var err error
	op.moduleID, op.recordID, err = batchPath(rawURL)
	if err != nil {
		return batchOp{}, err
	}
	if (op.method == http.MethodPost) != (op.recordID == "") {
		return batchOp{}, invalid("url must be %s", batchURLForm)
	}
	switch {
	case op.method == http.MethodDelete && body != bodyNone:
		return batchOp{}, invalid("a DELETE takes no body")
	case op.method != http.MethodDelete && body != bodyObject:
		return batchOp{}, invalid("body must be a JSON object, as the route takes")
	}
	for name, value := range headers {
		if !strings.EqualFold(name, "If-Match") || len(headers) > 1 {
			return batchOp{}, invalid("headers may hold If-Match alone")
		}
		if op.method != http.MethodPatch {
			return batchOp{}, invalid("If-Match applies to a PATCH only")
		}
		if op.ifMatch, err = parseIfMatch(value); err != nil {
			return batchOp{}, err
		}
	}
	return op, nil
}

// batchPath reads an operation's url: a module id, and a record id or "".
func batchPath(raw string) (moduleID, recordID string, err error) {
	u, perr := url.Parse(raw)
	if perr != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", "", invalid("url must be %s", batchURLForm)
	}
	rest, ok := strings.CutPrefix(u.Path, "/api/modules/")
	segs := strings.Split(rest, "/")
	if !ok || len(segs) < 2 || len(segs) > 3 || segs[0] == "" || segs[1] != "records" || (len(segs) == 3 && segs[2] == "") {
		return "", "", invalid("url must be %s", batchURLForm)
	}
	if len(segs) == 3 {
		recordID = segs[2]
	}
	for _, id := range []struct{ value, collection string }{{segs[0], "modules"}, {recordID, "records"}} {
		if id.value == "" {
			continue
		}
		if !cleanParam(id.value) {
			return "", "", models.ErrNotFound
		}
		if kind := pathIDs[id.collection]; !strings.HasPrefix(id.value, kind.prefix) {
			return "", "", &models.Error{Kind: models.KindNotFound, Message: kind.refusal(id.value)}
		}
	}
	return segs[0], recordID, nil
}

// actionOf is the permission a record write of method needs.
func actionOf(method string) string {
	if method == http.MethodDelete {
		return models.ActionDelete
	}
	return models.ActionWrite
}
