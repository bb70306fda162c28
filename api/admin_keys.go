package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// keyInput is the body of key create and change. expires_at distinguishes
// absent (unchanged) from null (never expires).
type keyInput struct {
	Name               *string             `json:"name"`
	Admin              *bool               `json:"admin"`
	Permissions        map[string][]string `json:"permissions"`
	RateLimitPerMinute *int                `json:"rate_limit_per_minute"`
	ExpiresAt          json.RawMessage     `json:"expires_at"`
}

func (in keyInput) model() (models.KeyInput, error) {
	out := models.KeyInput{Name: in.Name, Admin: in.Admin, Permissions: in.Permissions, RateLimitPerMinute: in.RateLimitPerMinute}
	switch string(in.ExpiresAt) {
	case "":
	case "null":
		out.ClearExpiry = true
	default:
		var v string
		if err := json.Unmarshal(in.ExpiresAt, &v); err != nil {
			return out, models.ValidationError([]models.FieldError{{Field: "expires_at", Message: "must be an RFC 3339 date-time or null"}})
		}
		t, err := models.ParseTime(v)
		if errors.Is(err, models.ErrTimeFormat) {
			return out, models.ValidationError([]models.FieldError{{Field: "expires_at", Message: "must be an RFC 3339 date-time or null"}})
		} else if err != nil {
			return out, models.ValidationError([]models.FieldError{{Field: "expires_at", Message: err.Error()}})
		}
		out.ExpiresAt = &t
	}
	return out, nil
}

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
	var in struct {
		GraceSeconds int `json:"grace_seconds"`
	}
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
