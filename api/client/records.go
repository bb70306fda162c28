package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RecordInput is a record to create: its fields, which the module's
// schema checks, and custom data, which it does not.
type RecordInput struct {
	Fields     map[string]any `json:"fields"`
	CustomData map[string]any `json:"custom_data,omitempty"`
}

// Record is a record as the API shows it.
type Record struct {
	ID         string         `json:"id"`
	ModuleID   string         `json:"module_id"`
	Fields     map[string]any `json:"fields"`
	CustomData map[string]any `json:"custom_data"`
	Version    int64          `json:"version"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

// RecordPage is one page of a module's records.
type RecordPage struct {
	Data  []Record `json:"data"`
	Total int64    `json:"total"`
	Page  int      `json:"page,omitempty"`
	Limit int      `json:"limit"`
}

func recordsPath(moduleID string) string { return "/api/modules/" + escape(moduleID) + "/records" }

// CreateRecord creates a record in a module.
func (c *Client) CreateRecord(ctx context.Context, moduleID string, in RecordInput) (*Record, error) {
	var r Record
	if _, err := c.do(ctx, http.MethodPost, recordsPath(moduleID), in, &r); err != nil {
		return nil, err
	}
	if r.ID == "" {
		return nil, fmt.Errorf("create record: the API answered without an id")
	}
	return &r, nil
}

// GetRecord reads one record of a module.
func (c *Client) GetRecord(ctx context.Context, moduleID, recordID string) (*Record, error) {
	var r Record
	if _, err := c.do(ctx, http.MethodGet, recordsPath(moduleID)+"/"+escape(recordID), nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListRecords reads page (from 1) of a module's records, limit a page.
func (c *Client) ListRecords(ctx context.Context, moduleID string, page, limit int) (*RecordPage, error) {
	q := url.Values{"page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(limit)}}
	var p RecordPage
	if _, err := c.do(ctx, http.MethodGet, recordsPath(moduleID)+"?"+q.Encode(), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
