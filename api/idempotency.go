package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Writes sent with an Idempotency-Key are answered once (api/README.md,
// "Idempotency"): the answer is stored with the key in the transaction
// that makes the change, so that a retry, even of a call whose answer was
// lost with the connection or the process, gets the original answer and
// changes nothing again. Most routes run their handler in a transaction
// of the store's that claims the key first and stores the answer last
// (inTransaction); the record create, the hottest keyed write, renders its
// answer before its insert and stores it in the create's own statements
// (keyedCreate, models.KeyedCreate): no transaction around the handler
// and, on PostgreSQL, no statement beyond the create's one.

const (
	idempotencyKeyHeader = "Idempotency-Key"
	replayedHeader       = "Idempotent-Replayed"
	// maxIdempotencyKey bounds a key: a UUID or a client's own order
	// number fits many times over.
	maxIdempotencyKey = 255
	// DefaultIdempotencyTTL is how long an answer is kept for its retries
	// when Deps.IdempotencyTTL is zero.
	DefaultIdempotencyTTL = 24 * time.Hour
)

// storedHeaders are the headers of an answer that its replay repeats: what
// a client reads of a write's answer beyond its body.
var storedHeaders = []string{"Content-Type", "ETag", "Location"}

// outsideTransaction lists the routes whose handler calls out of the
// database (Temporal) before it answers, or records a refusal it answers
// with an error (the inbound replay records a rejected replay). They do not
// run in the transaction that stores their answer: on SQLite it would hold
// every write of the process behind a Temporal call, a workflow started by
// a transaction that then rolls back is a change no row records, and a
// rolled-back refusal would not be recorded. They hold the key's lock
// while they run, and store a success in a statement of its own after.
var outsideTransaction = map[string]bool{
	"/api/admin/modules/:id/inbound-events/:eventId/replay": true,
	"/api/admin/webhook-endpoints/:id/recover":              true,
	"/api/admin/webhook-endpoints/:id/resync":               true,
	"/api/admin/webhook-deliveries/:id/replay":              true,
}

// errNotStored rolls back the transaction of a request whose answer is
// not a success: it changed nothing, so its retry runs afresh.
var errNotStored = errors.New("answer not stored: not a success")

// errKeyBusy answers a key whose first request is still running.
var errKeyBusy = models.ErrIdempotencyKeyBusy

// idempotent is middleware for POST, PATCH and DELETE: a request sent with
// an Idempotency-Key runs once per key and API key; its retries are
// answered from its stored answer. Without the header the request runs
// as it would without the middleware.
func (s *Server) idempotent(c *gin.Context) {
	switch c.Request.Method {
	case http.MethodPost, http.MethodPatch, http.MethodDelete:
	default:
		c.Next()
		return
	}
	vals := c.Request.Header.Values(idempotencyKeyHeader)
	if len(vals) == 0 {
		c.Next()
		return
	}
	if len(vals) > 1 || !validIdempotencyKey(vals[0]) {
		s.fail(c, invalid("the %s header must be one value of 1 to %d printable ASCII characters", idempotencyKeyHeader, maxIdempotencyKey))
		return
	}
	body, ok := s.bufferBody(c)
	if !ok {
		c.Next() // over the bound: the handler refuses it as it would anyway
		return
	}
	w := idemWrite{s: s, c: c, keyID: callOf(c).key.ID, key: vals[0], fingerprint: fingerprint(c.Request, body)}
	if outsideTransaction[c.FullPath()] {
		w.outside()
		return
	}
	if c.Request.Method == http.MethodPost && c.FullPath() == keyedCreateRoute {
		w.keyedCreate()
		return
	}
	w.inTransaction()
}

// idemWrite is one request sent with an idempotency key.
type idemWrite struct {
	s           *Server
	c           *gin.Context
	keyID, key  string
	fingerprint []byte
}

// inTransaction runs the request in a transaction that claims the key
// first and stores the answer last, and answers once it has committed.
func (w idemWrite) inTransaction() {
	s, c := w.s, w.c
	orig := c.Request
	var (
		release func()
		stored  *models.IdempotentAnswer
		buf     *bufferedWriter
	)
	// Given back however the request ends, a panic of its handler
	// included (SQLite's lock would otherwise be held until a restart).
	defer func() {
		c.Request = orig
		if release != nil {
			release()
		}
	}()
	err := s.store.Atomically(orig.Context(), func(ctx context.Context) error {
		var err error
		release, stored, err = s.store.ClaimIdempotencyKey(ctx, w.keyID, w.key, s.idemTTL())
		if err != nil || stored != nil {
			return cmpErr(err, errNotStored)
		}
		c.Request = orig.WithContext(ctx)
		buf = w.run()
		c.Request = orig
		if !buf.succeeded() {
			return errNotStored
		}
		return s.store.SaveIdempotentAnswer(ctx, w.keyID, w.key, s.idemTTL(), buf.answer(w.fingerprint))
	})
	c.Request = orig
	switch {
	case stored != nil:
		w.replay(stored)
	case err == nil || errors.Is(err, errNotStored) && buf != nil:
		buf.flush()
	case errors.Is(err, errKeyBusy):
		w.busy()
	case buf != nil:
		// The handler succeeded and the commit failed, or could not be
		// confirmed: the change may or may not be there. The retry with
		// the key tells which, replaying it or making it.
		s.log.WarnContext(c.Request.Context(), "keyed write not confirmed; answered 503", "request_id", requestID(c), "error", err)
		s.fail(c, models.ErrUnavailable)
	default:
		s.fail(c, err)
	}
}

// keyedCreateRoute is the record create, whose answer its own statements
// store (models.KeyedCreate) rather than a transaction around its handler.
const keyedCreateRoute = "/api/modules/:id/records"

// keyedCreate runs a record create that stores its answer under the key
// in the create's own statements, and answers as inTransaction does: the
// create's answer once stored, a stored answer replayed, a held key busy.
// A create that fails or never reaches the store (an unknown module, an
// invalid record) stores nothing and is answered its error.
func (w idemWrite) keyedCreate() {
	s, c := w.s, w.c
	k := &models.KeyedCreate{KeyID: w.keyID, Key: w.key, TTL: s.idemTTL(), Fingerprint: w.fingerprint, Render: renderCreated}
	orig := c.Request
	c.Request = orig.WithContext(models.WithKeyedCreate(orig.Context(), k))
	buf := w.run()
	c.Request = orig
	switch {
	case k.Stored() != nil:
		w.replay(k.Stored())
	case k.Busy():
		w.busy()
	default:
		if buf.succeeded() && !k.Taken() {
			// A success whose answer no store call took is not stored:
			// the handler no longer creates through CreateRecord.
			s.log.ErrorContext(c.Request.Context(), "keyed create answered without storing its answer", "request_id", requestID(c))
		}
		buf.flush()
	}
}

// outside runs the request holding the key's lock but in no transaction,
// and stores a success after it.
func (w idemWrite) outside() {
	s, c := w.s, w.c
	release, stored, err := s.store.ClaimIdempotencyKey(c.Request.Context(), w.keyID, w.key, s.idemTTL())
	switch {
	case errors.Is(err, errKeyBusy):
		w.busy()
		return
	case err != nil:
		s.fail(c, err)
		return
	}
	defer release()
	if stored != nil {
		w.replay(stored)
		return
	}
	buf := w.run()
	if buf.succeeded() {
		// The change is made: it is answered even when its answer cannot
		// be stored, and a retry would then make it again.
		ctx := context.WithoutCancel(c.Request.Context())
		if err := s.store.SaveIdempotentAnswer(ctx, w.keyID, w.key, s.idemTTL(), buf.answer(w.fingerprint)); err != nil {
			s.log.WarnContext(ctx, "idempotent answer not stored", "request_id", requestID(c), "error", err)
		}
	}
	buf.flush()
}

// run runs the rest of the chain into a buffer, which is not sent yet.
func (w idemWrite) run() *bufferedWriter {
	c := w.c
	buf := newBufferedWriter(c.Writer)
	c.Writer = buf
	defer func() { c.Writer = buf.ResponseWriter }()
	c.Next()
	return buf
}

// replay answers a request from the answer stored under its key, or
// refuses it when the key was sent with another request.
func (w idemWrite) replay(a *models.IdempotentAnswer) {
	c := w.c
	if !a.Same(w.fingerprint) {
		failCode(c, http.StatusUnprocessableEntity, codeIdempotencyKeyReused,
			"this Idempotency-Key was sent with another request (method, path or body); use a new key for a new request")
		return
	}
	h := c.Writer.Header()
	for k, v := range a.Header {
		h.Set(k, v)
	}
	h.Set(replayedHeader, "true")
	// The first answer may have held a credential (a created key's
	// secret); its replay is kept from caches whatever the route.
	h.Set("Cache-Control", "no-store")
	c.Status(a.Status)
	_, _ = c.Writer.Write(a.Body)
	c.Abort()
}

// busy refuses a request whose key another request holds.
func (w idemWrite) busy() {
	w.c.Header("Retry-After", "1")
	w.s.fail(w.c, errKeyBusy)
}

// idemTTL is how long an answer answers its retries.
func (s *Server) idemTTL() time.Duration {
	if s.idempotencyTTL > 0 {
		return s.idempotencyTTL
	}
	return DefaultIdempotencyTTL
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// validIdempotencyKey: 1 to maxIdempotencyKey printable ASCII characters.
func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > maxIdempotencyKey {
		return false
	}
	for i := range len(k) {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// bufferBody reads the request body, within the bound the handlers read it
// with, and puts it back for them. It returns false, having put back what
// it read before the rest, for a body over the bound.
func (s *Server) bufferBody(c *gin.Context) ([]byte, bool) {
	r := c.Request
	if r.ContentLength > MaxBodyBytes {
		return nil, false
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if len(body) > MaxBodyBytes || err != nil {
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		return nil, false
	}
	r.Body = readCloser{bytes.NewReader(body), r.Body}
	return body, true
}

type readCloser struct {
	io.Reader
	io.Closer
}

// fingerprint identifies a request: its method, its path with its query,
// as sent, and its body.
func fingerprint(r *http.Request, body []byte) []byte {
	h := sha256.New()
	io.WriteString(h, r.Method)
	h.Write([]byte{0})
	io.WriteString(h, r.URL.RequestURI())
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// bufferedWriter holds an answer until the transaction that made it has
// committed: an answer sent before the commit could tell of a change that
// then rolls back.
type bufferedWriter struct {
	gin.ResponseWriter
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func newBufferedWriter(w gin.ResponseWriter) *bufferedWriter {
	return &bufferedWriter{ResponseWriter: w, header: w.Header().Clone(), status: http.StatusOK}
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(code int) {
	if code > 0 && !b.wrote {
		b.status = code
	}
}

func (b *bufferedWriter) WriteHeaderNow() { b.wrote = true }

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.wrote = true
	return b.body.Write(p)
}

func (b *bufferedWriter) WriteString(s string) (int, error) {
	b.wrote = true
	return b.body.WriteString(s)
}

func (b *bufferedWriter) Status() int   { return b.status }
func (b *bufferedWriter) Size() int     { return b.body.Len() }
func (b *bufferedWriter) Written() bool { return b.wrote }
func (b *bufferedWriter) Flush()        {}

func (b *bufferedWriter) succeeded() bool { return b.status >= 200 && b.status < 300 }

// answer is what is stored of the buffered answer.
func (b *bufferedWriter) answer(fingerprint []byte) models.IdempotentAnswer {
	a := models.IdempotentAnswer{Fingerprint: fingerprint, Status: b.status, Body: b.body.Bytes(), Header: map[string]string{}}
	for _, k := range storedHeaders {
		if v := b.header.Get(k); v != "" {
			a.Header[k] = v
		}
	}
	return a
}

// flush sends the buffered answer.
func (b *bufferedWriter) flush() {
	w := b.ResponseWriter
	h := w.Header()
	clear(h)
	for k, v := range b.header {
		h[k] = v
	}
	w.WriteHeader(b.status)
	w.WriteHeaderNow()
	if b.body.Len() > 0 {
		_, _ = w.Write(b.body.Bytes())
	}
}
