package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 1 << 20

// readJSON decodes the request body into dst, answering the error itself
// and returning false when the body is too large (413), not JSON (415),
// malformed (400) or of the wrong shape (422). An empty body is accepted
// as {} when optional is set.
func (s *Server) readJSON(c *gin.Context, dst any, optional bool) bool {
	body, ok := s.readJSONBody(c, optional)
	if !ok || body == nil {
		return ok
	}
	if err := decodeStrict(body, dst); err != nil {
		s.fail(c, err)
		return false
	}
	return true
}

// readJSONBody reads a request body that must be a JSON object, answering
// as readJSON does when it is not; an empty body, when optional, is
// returned as nil.
func (s *Server) readJSONBody(c *gin.Context, optional bool) ([]byte, bool) {
	body, err := readBody(c)
	if err != nil {
		s.fail(c, err)
		return nil, false
	}
	r := c.Request
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 && optional {
		return nil, true
	}
	if !isJSONType(r.Header.Get("Content-Type")) {
		s.fail(c, errNotJSON)
		return nil, false
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		s.fail(c, invalid("the body must be a JSON object"))
		return nil, false
	}
	return body, true
}

// errTooLarge answers a body over MaxBodyBytes.
var errTooLarge = &models.Error{Kind: models.KindTooLarge, Message: fmt.Sprintf("the body exceeds %d bytes", MaxBodyBytes)}

// errNotJSON answers a body sent without a JSON content type.
var errNotJSON = &models.Error{Kind: models.KindUnsupportedType, Message: "the body must be JSON, sent with Content-Type: application/json"}

// readBody reads the request body, at most MaxBodyBytes of it. When the
// body is larger it returns what it read and errTooLarge, and the rest of
// the body is drained after the answer (lingerAfterTooLarge).
func readBody(c *gin.Context) ([]byte, error) {
	r := c.Request
	if r.ContentLength > MaxBodyBytes {
		// A client waiting for 100 Continue has sent none of the body:
		// it reads the 413 at once, and there is nothing to drain.
		expectsContinue := strings.EqualFold(r.Header.Get("Expect"), "100-continue")
		refuseTooLarge(c, !expectsContinue && r.ContentLength <= lingerMaxBytes)
		return nil, errTooLarge
	}
	// Read into a buffer of the announced length: grown from nothing, it
	// would be copied a dozen times for a large body.
	buf := bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 0)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(c.Writer, r.Body, MaxBodyBytes))
	body := buf.Bytes()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			refuseTooLarge(c, true)
			return body, errTooLarge
		}
		return body, invalid("the body could not be read")
	}
	return body, nil
}

// Bounds of the drain after a 413 (lingerAfterTooLarge), as nginx's
// lingering close: enough for the bodies that common clients send whole
// before they read an answer, a little more than a few seconds' upload of
// one, and small against what an attacker could make the server read anyway.
const (
	lingerMaxBytes = 8 << 20
	lingerTimeout  = 5 * time.Second
)

// lingerKey marks a request whose unread body is drained after its 413.
const lingerKey = "recordhub.linger"

// refuseTooLarge prepares the 413 of a body over MaxBodyBytes: the
// connection is closed after the answer, and with drain set, the rest of
// the body is read and discarded first.
//
// Without this, net/http (which discards at most 256 KiB of an unread
// body) closes the connection while the client is still sending, and the
// client's next write meets a reset: clients that send the whole body
// before reading the answer (Python's http.client, urllib, requests) never
// see the 413.
func refuseTooLarge(c *gin.Context, drain bool) {
	c.Header("Connection", "close")
	if !drain {
		return
	}
	// Read the body after the answer is written, instead of net/http's
	// discard before it.
	if err := http.NewResponseController(c.Writer).EnableFullDuplex(); err != nil {
		return // HTTP/2 and wrapped writers: net/http's own handling
	}
	c.Set(lingerKey, true)
}

// lingerAfterTooLarge is middleware: after a 413 set up by refuseTooLarge
// it sends the answer, then reads and discards the rest of the body, up to
// lingerMaxBytes or for lingerTimeout, whichever comes first, so that the
// client has sent its body and read the answer before the connection
// closes. It runs outside the metrics and the access log: the drain is not
// the request's latency.
func lingerAfterTooLarge(c *gin.Context) {
	c.Next()
	if !c.GetBool(lingerKey) {
		return
	}
	c.Writer.Flush()
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetReadDeadline(time.Now().Add(lingerTimeout))
	_, _ = io.CopyN(io.Discard, c.Request.Body, lingerMaxBytes)
}

func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// decodeStrict decodes one JSON value with numbers as json.Number and
// refuses unknown properties and trailing data.
func decodeStrict(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			field := typeErr.Field
			if field == "" {
				return invalid("the body must be a JSON object")
			}
			return models.ValidationError([]models.FieldError{{Field: field, Message: "must be " + jsonKind(typeErr.Type.Kind().String())}})
		}
		if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return invalid("unknown property %s", msg)
		}
		return invalid("the body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return invalid("the body holds more than one JSON value")
	}
	// PostgreSQL stores no U+0000 in text or jsonb: refuse it here, on both
	// databases, rather than fail there. Only a body that spells the
	// escape is decoded again to find where.
	if bytes.Contains(body, []byte(`\u0000`)) {
		var v any
		if json.Unmarshal(body, &v) == nil {
			if fe, ok := models.FindNUL(v); ok {
				return models.ValidationError([]models.FieldError{fe})
			}
		}
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return invalid("the body holds more than one JSON value")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "ptr":
		return "of another type"
	}
	return "a number"
}
