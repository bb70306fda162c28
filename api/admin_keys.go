package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

func (s *Server) adminCreateKey(c *gin.Context) {
	var in keyInput
	if !s.readJSON(c, &in, true) {
		return
	}
	mi, err := in.model()
	if err != nil {
		s.fail(c, err)
		return
	}
	k, secret, err := s.store.CreateKey(c.Request.Context(), tenantOf(c), mi, s.defaultRateLimit)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := keyOut(k, s.now())
	out.Key = secret
	c.JSON(http.StatusCreated, out)
}

func (s *Server) adminListKeys(c *gin.Context) {
	page, err := pageOf(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	keys, total, err := s.store.ListKeys(c.Request.Context(), tenantOf(c), page)
	if err != nil {
		s.fail(c, err)
		return
	}
	now := s.now()
	out := list[keyJSON]{Data: make([]keyJSON, len(keys)), Total: total, Page: page.Page, Limit: page.Limit}
	for i := range keys {
		out.Data[i] = keyOut(&keys[i], now)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) adminGetKey(c *gin.Context) {
	k, err := s.store.GetKey(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, keyOut(k, s.now()))
}

func (s *Server) adminUpdateKey(c *gin.Context) {
	var in keyInput
	if !s.readJSON(c, &in, false) {
		return
	}
	mi, err := in.model()
	if err != nil {
		s.fail(c, err)
		return
	}
	k, err := s.store.UpdateKey(c.Request.Context(), tenantOf(c), c.Param("id"), mi)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, keyOut(k, s.now()))
}

func (s *Server) adminRevokeKey(c *gin.Context) {
	k, err := s.store.RevokeKey(c.Request.Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, keyOut(k, s.now()))
}

func (s *Server) adminRotateKey(c *gin.Context) {
	var in graceInput
	if !s.readJSON(c, &in, true) {
		return
	}
	k, secret, err := s.store.RotateKey(c.Request.Context(), tenantOf(c), c.Param("id"), in.GraceSeconds)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := keyOut(k, s.now())
	out.Key = secret
	c.JSON(http.StatusOK, out)
}
