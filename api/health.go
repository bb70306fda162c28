package api

import (
	"context"
	_ "embed"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

//go:embed openapi.yaml
var openAPISpec []byte

func serveOpenAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/yaml", openAPISpec)
}

func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, statusJSON{Status: "ok"})
}

// readyz answers 200 when every dependency answers within two seconds.
func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	for _, ch := range s.ready {
		if err := ch.Check(ctx); err != nil {
			s.log.WarnContext(ctx, "readiness check failed", "check", ch.Name, "error", err)
			checks[ch.Name] = "unavailable"
			ok = false
			continue
		}
		checks[ch.Name] = "ok"
	}
	if !ok {
		c.JSON(http.StatusServiceUnavailable, notReadyJSON{
			errorBody: errorBody{Error: codeUnavailable, Message: "a dependency is unavailable", RequestID: requestID(c)}, Checks: checks,
		})
		return
	}
	c.JSON(http.StatusOK, readyJSON{Status: "ok", Checks: checks})
}
