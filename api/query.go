package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/models"
)

// Page bounds of every list.
const (
	defaultLimit = 20
	maxLimit     = 100
)

// pageOf reads page (≥1, default 1) and limit (1..100, default 20).
func pageOf(c *gin.Context) (models.Page, error) {
	p, err := pageAndLimit(c)
	if err != nil {
		return p, err
	}
	const maxOffset = 1 << 30
	if p.Page > maxOffset/p.Limit {
		return p, invalid("page is too large")
	}
	return p, nil
}

// pageAndLimit reads page (≥1, default 1) and limit (1..100, default 20),
// leaving the bound on their product to the caller.
func pageAndLimit(c *gin.Context) (models.Page, error) {
	p := models.Page{Page: 1, Limit: defaultLimit}
	if v, ok := c.GetQuery("page"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, invalid("page must be an integer of at least 1")
		}
		p.Page = n
	}
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return p, invalid("limit must be an integer from 1 to %d", maxLimit)
		}
		p.Limit = n
	}
	return p, nil
}

// timeParam reads an optional time query parameter: an RFC 3339
// date-time within years 1 to 9999 in UTC (models.ParseTime), returned in
// UTC at the stores' precision.
func timeParam(c *gin.Context, name string) (*time.Time, error) {
	v, ok := c.GetQuery(name)
	if !ok || v == "" {
		return nil, nil
	}
	t, err := models.ParseTime(v)
	if err != nil {
		return nil, invalid("%s %v", name, err)
	}
	return &t, nil
}

// filterOperand converts the value of parameter param, a condition of op
// on field f (filter[<field>] is op eq), to the value the condition
// compares with, refusing an operator the field's type does not take and
// a value it could not hold before any SQL is built.
func filterOperand(f models.Field, param, op, raw string) (any, error) {
	v, err := f.FilterOperand(op, raw)
	if err != nil {
		return nil, invalid("%s %v", param, err)
	}
	return v, nil
}

// timeOperand converts the value of parameter param, a condition of op on
// a record's created_at or updated_at, to the instant it compares with.
func timeOperand(param, op, raw string) (time.Time, error) {
	if !slices.Contains(models.TimeOps, op) {
		return time.Time{}, invalid("%s: created_at and updated_at take %s", param, strings.Join(models.TimeOps, ", "))
	}
	t, err := models.ParseTime(raw)
	if err != nil {
		return time.Time{}, invalid("%s %v", param, err)
	}
	return t, nil
}

// filterParam splits a filter parameter's name into the field and the
// operator: filter[<field>] is eq, filter[<field>][<op>] names its own.
func filterParam(param string) (field, op string, ok bool) {
	rest, ok := strings.CutPrefix(param, "filter[")
	if !ok {
		return "", "", false
	}
	field, rest, ok = strings.Cut(rest, "]")
	if !ok {
		return "", "", false
	}
	if rest == "" {
		return field, models.OpEq, true
	}
	op, ok = strings.CutPrefix(rest, "[")
	if !ok {
		return "", "", false
	}
	op, ok = strings.CutSuffix(op, "]")
	if !ok || strings.ContainsAny(op, "[]") {
		return "", "", false
	}
	return field, op, true
}

// takes refuses, 400 invalid_request, a query parameter the route does not
// take, naming the unknown ones (unknown) and those the route takes
// (allowed): a misspelt or guessed parameter (since on the access logs, or
// page on a list that has no pages) would otherwise be ignored and answer
// rows the caller did not select. A name ending in "[]" takes its bracket
// form: "filter[]" takes filter[status], not filter.
func (s *Server) takes(names ...string) gin.HandlerFunc {
	allowed := make([]string, len(names))
	for i, n := range names {
		if base, ok := strings.CutSuffix(n, "[]"); ok {
			n = base + "[<field>]"
		}
		allowed[i] = n
	}
	return func(c *gin.Context) {
		if c.Request.URL.RawQuery == "" {
			c.Next()
			return
		}
		var unknown []string
		for p := range c.Request.URL.Query() {
			if !takesParam(names, p) {
				unknown = append(unknown, p)
			}
		}
		if len(unknown) == 0 {
			c.Next()
			return
		}
		slices.Sort(unknown)
		c.AbortWithStatusJSON(http.StatusBadRequest, unknownQueryBody{
			errorBody: errorBody{Error: string(models.KindInvalid), Message: unknownQueryMessage(unknown, allowed), RequestID: requestID(c)},
			Unknown:   unknown,
			Allowed:   allowed,
		})
	}
}

// takesParam reports whether a route that takes names takes parameter p.
func takesParam(names []string, p string) bool {
	for _, n := range names {
		if base, ok := strings.CutSuffix(n, "[]"); ok {
			if rest, ok := strings.CutPrefix(p, base+"["); ok && strings.HasSuffix(rest, "]") {
				return true
			}
			continue
		}
		if p == n {
			return true
		}
	}
	return false
}

func unknownQueryMessage(unknown, allowed []string) string {
	quoted := make([]string, len(unknown))
	for i, u := range unknown {
		quoted[i] = strconv.Quote(shortened(u))
	}
	var b strings.Builder
	b.WriteString("unknown query parameter")
	if len(unknown) > 1 {
		b.WriteString("s")
	}
	b.WriteString(" " + strings.Join(quoted, ", ") + "; ")
	if len(allowed) == 0 {
		b.WriteString("this route takes no query parameters")
	} else {
		b.WriteString("this route takes: " + strings.Join(allowed, ", "))
	}
	return b.String()
}

// shortened cuts what a caller sent to 64 characters before an error
// message quotes it.
func shortened(s string) string {
	const maxQuoted = 64
	if cut := firstChars(s, maxQuoted); cut != s {
		return cut + "…"
	}
	return s
}
