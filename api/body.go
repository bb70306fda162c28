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
	body, err := readBody(c)
	if err != nil {
		s.fail(c, err)
		return false
	}
	r := c.Request
	if len(bytes.TrimSpace(body)) == 0 && optional {
		return true
	}
	if !isJSONType(r.Header.Get("Content-Type")) {
		s.fail(c, errNotJSON)
		return false
	}
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' {
		s.fail(c, invalid("the body must be a JSON object"))
		return false
	}
	if err := decodeStrict(body, dst); err != nil {
		s.fail(c, err)
		return false
	}
	return true
}

// errTooLarge answers a body over MaxBodyBytes.
var errTooLarge = &models.Error{Kind: models.KindTooLarge, Message: fmt.Sprintf("the body exceeds %d bytes", MaxBodyBytes)}

// errNotJSON answers a body sent without a JSON content type.
var errNotJSON = &models.Error{Kind: models.KindUnsupportedType, Message: "the body must be JSON, sent with Content-Type: application/json"}

// readBody reads the request body, at most MaxBodyBytes of it. When the
// body is larger it returns what it read and errTooLarge.
func readBody(c *gin.Context) ([]byte, error) {
	r := c.Request
	if r.ContentLength > MaxBodyBytes {
		return nil, errTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return body, errTooLarge
		}
		return body, invalid("the body could not be read")
	}
	return body, nil
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
