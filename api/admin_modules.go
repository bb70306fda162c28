package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

func (s *Server) adminCreateModule(c *gin.Context) {
	var in moduleInput
	if !s.readJSON(c, &in, false) {
		return
	}
	m, err := s.store.CreateModule(c.Request.Context(), tenantOf(c), in.model())
	if err != nil {
		s.fail(c, err)
		return
	}
	callOf(c).moduleID = m.ID
	c.JSON(http.StatusCreated, moduleOut(m))
}

func (s *Server) adminListModules(c *gin.Context) {
	mods, err := s.store.ListModules(c.Request.Context(), tenantOf(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := list[moduleJSON]{Data: make([]moduleJSON, len(mods)), Total: int64(len(mods))}
	for i := range mods {
		out.Data[i] = moduleOut(&mods[i])
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminGetModule(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	m, err := s.store.GetModule(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, moduleOut(m))
}

func (s *Server) adminUpdateModule(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	var in moduleInput
	if !s.readJSON(c, &in, false) {
		return
	}
	m, err := s.store.UpdateModule(c.Request.Context(), tenantOf(c), c.Param("id"), in.model())
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, moduleOut(m))
}

func (s *Server) adminDeleteModule(c *gin.Context) {
	callOf(c).moduleID = c.Param("id")
	if err := s.store.DeleteModule(c.Request.Context(), tenantOf(c), c.Param("id")); err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, deletedJSON{ID: c.Param("id"), Deleted: true})
}
