package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models/eventschema"
)

// adminModuleEventSchemas answers the JSON Schema document of the bodies of
// a module's webhook events, typed from its fields as they are now.
func (s *Server) adminModuleEventSchemas(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	m, err := s.store.GetModule(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, eventschema.For(m))
}
