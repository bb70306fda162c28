package api

import (
	"github.com/recordhub/recordhub/models"
)

// Wire types: what the API sends and takes, kept apart from storage types
// so that a column never reaches a client by accident. Every request and
// response body is declared in the wire*.go files, one per resource, and
// this one holds the envelopes and the error body they share: the whole
// HTTP contract reads in one place, beside openapi.yaml. Answers that
// were once written as maps (deletedJSON, replayJSON, …) declare their
// members alphabetically, the order they have always been sent in.

// list is the envelope of every list response.
type list[T any] struct {
	Data  []T   `json:"data"`
	Total int64 `json:"total"`
	Page  int   `json:"page,omitempty"`
	Limit int   `json:"limit,omitempty"`
}

// cursorListOf is the envelope of a list that pages by cursor: page only
// when the caller gave no cursor; next_cursor null on the last page;
// total_capped when more than maxCounted rows match, total then being
// maxCounted.
type cursorListOf[T any] struct {
	Data        []T     `json:"data"`
	Total       int64   `json:"total"`
	TotalCapped bool    `json:"total_capped"`
	Page        int     `json:"page,omitempty"`
	Limit       int     `json:"limit"`
	NextCursor  *string `json:"next_cursor"`
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error      string              `json:"error"`
	Message    string              `json:"message"`
	RequestID  string              `json:"request_id"`
	Details    []models.FieldError `json:"details,omitempty"`
	Required   string              `json:"required,omitempty"`
	Limit      int                 `json:"limit,omitempty"`
	RetryAfter int                 `json:"retry_after,omitempty"`
	// Index names the operation of a batch that failed (from 0).
	Index *int `json:"index,omitempty"`
}

// unknownQueryBody refuses a query parameter the route does not take:
// those it got that it does not take, and those it takes (empty when it
// takes none).
type unknownQueryBody struct {
	errorBody
	Unknown []string `json:"unknown"`
	Allowed []string `json:"allowed"`
}

// deletedJSON answers a delete.
type deletedJSON struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

// statusJSON answers /healthz.
type statusJSON struct {
	Status string `json:"status"`
}

// readyJSON answers /readyz when every check passed: each check's name
// and "ok".
type readyJSON struct {
	Checks map[string]string `json:"checks"`
	Status string            `json:"status"`
}

// notReadyJSON answers /readyz when a check failed: an error body that
// names each check's outcome ("ok" or "unavailable").
type notReadyJSON struct {
	Checks map[string]string `json:"checks"`
	errorBody
}

// nonNilHeaders is a kept call's headers on the wire: an object, never
// null.
func nonNilHeaders(h models.Headers) map[string][]string {
	if h == nil {
		return map[string][]string{}
	}
	return h
}
