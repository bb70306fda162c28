package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// headersIn reads the headers member of an endpoint body: absent leaves
// the custom headers as they are (nil), null and {} remove them all, an
// object of names to strings replaces the whole set.
func headersIn(raw json.RawMessage) (*map[string]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	h := map[string]string{}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return &h, nil
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, models.ValidationError([]models.FieldError{{Field: "headers", Message: "must be an object of header names to string values, or null"}})
	}
	return &h, nil
}

// maskedHeaders is what answers show of an endpoint's custom headers: each
// name with models.HeaderMask for its value.
func maskedHeaders(names []string) map[string]string {
	out := make(map[string]string, len(names))
	for _, n := range names {
		out[n] = models.HeaderMask
	}
	return out
}

// adminEndpointHeaders answers an endpoint's custom headers in clear, the
// only answer that holds them, as the secret route holds the secret.
func (s *Server) adminEndpointHeaders(c *gin.Context) {
	e, err := s.store.GetEndpoint(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	h, err := s.store.EndpointHeaders(e)
	if err != nil {
		s.fail(c, err)
		return
	}
	if h == nil {
		h = map[string]string{}
	}
	c.JSON(http.StatusOK, gin.H{"headers": h})
}
