package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"
)

// Page is one page of a list that pages by number (records, keys,
// endpoints): Total counts the items of every page together.
type Page[T any] struct {
	Data  []T   `json:"data"`
	Total int64 `json:"total"`
	Page  int   `json:"page,omitempty"`
	Limit int   `json:"limit"`
}

// CursorPage is one page of a list that pages by cursor (delivery
// attempts, access logs): NextCursor, nil on the last page, asks for the
// next one. Total counts the rows of every page together up to 10,000
// (TotalCapped past it).
type CursorPage[T any] struct {
	Data        []T     `json:"data"`
	Total       int64   `json:"total"`
	TotalCapped bool    `json:"total_capped"`
	Page        int     `json:"page,omitempty"`
	Limit       int     `json:"limit"`
	NextCursor  *string `json:"next_cursor"`
}

// List is the answer of a list that is not paged (modules).
type List[T any] struct {
	Data  []T   `json:"data"`
	Total int64 `json:"total"`
}

// setPage adds page and limit to q, each only when set: the API's
// defaults (1 and 20) stand for 0.
func setPage(q url.Values, page, limit int) {
	if page != 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
}

// walkPages yields the items of page after page, read by get from first
// on, until a page ends the list (Total reached, or a short or empty
// page), or the first error, which it yields last.
func walkPages[T any](ctx context.Context, first int, get func(ctx context.Context, page int) (*Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for page := max(first, 1); ; page++ {
			p, err := get(ctx, page)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, v := range p.Data {
				if !yield(v, nil) {
					return
				}
			}
			if len(p.Data) == 0 || p.Limit <= 0 || len(p.Data) < p.Limit || int64(page)*int64(p.Limit) >= p.Total {
				return
			}
		}
	}
}

// walkCursor yields the rows of a cursor list page after page, read by
// get (from cursor "" on: the first page), until next_cursor is null, or
// the first error, which it yields last.
func walkCursor[T any](ctx context.Context, get func(ctx context.Context, cursor string) (*CursorPage[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		cursor := ""
		for {
			p, err := get(ctx, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, v := range p.Data {
				if !yield(v, nil) {
					return
				}
			}
			if p.NextCursor == nil || *p.NextCursor == "" {
				return
			}
			cursor = *p.NextCursor
		}
	}
}
