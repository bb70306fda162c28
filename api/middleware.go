package api

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
)

// call is what the middleware chain learns about a request, for its
// handlers and its access-log row.
type call struct {
	requestID string
	key       *models.APIKey
	tenantID  string
	keyID     string
	moduleID  string
}

const callKey = "recordhub.call"

func callOf(c *gin.Context) *call {
	if v, ok := c.Get(callKey); ok {
		return v.(*call)
	}
	cl := &call{}
	c.Set(callKey, cl)
	return cl
}

func requestID(c *gin.Context) string { return callOf(c).requestID }

// tenantOf returns the authenticated key's tenant.
func tenantOf(c *gin.Context) string { return callOf(c).key.TenantID }

// requestID takes a caller's X-Request-Id when it is a sane token, or makes
// one, and echoes it on every response.
func (s *Server) requestID(c *gin.Context) {
	id := c.GetHeader("X-Request-Id")
	if !validRequestID(id) {
		id = models.NewID(models.PrefixRequest)
	}
	c.Set(callKey, &call{requestID: id})
	c.Header("X-Request-Id", id)
	c.Next()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			return false
		}
	}
	return true
}

// observe counts every request in the metrics and queues an access-log row
// for every call under /api.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	elapsed := time.Since(start)
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := c.Writer.Status()
	s.metrics.observe(c.Request.Method, route, status, elapsed)
	if !strings.HasPrefix(c.Request.URL.Path, "/api") {
		return
	}
	cl := callOf(c)
	// The query string is not logged: only the path, without tokens. Path
	// and user agent are cut to what the store keeps before they are
	// queued, so that a full queue holds no megabyte headers.
	path := redactInboundPath(c.Request.URL.Path)
	s.logs.Enqueue(models.AccessLog{
		ID:         models.NewID(models.PrefixAccessLog),
		TenantID:   optional(cl.tenantID),
		KeyID:      optional(cl.keyID),
		Method:     c.Request.Method,
		Path:       models.StorableText(path, models.MaxAccessLogPath),
		Route:      route,
		ModuleID:   optional(cl.moduleID),
		Status:     status,
		DurationMS: math.Round(float64(elapsed.Microseconds())) / 1000,
		IP:         c.ClientIP(),
		UserAgent:  models.StorableText(c.Request.UserAgent(), models.MaxUserAgent),
		RequestID:  cl.requestID,
		CreatedAt:  start.UTC().Truncate(time.Microsecond),
	})
}

// redactInboundPath keeps inbound webhook tokens, which are credentials,
// out of a logged path, whatever route the request matched: another method,
// a trailing slash or extra segments, repeated slashes, dot segments, other
// case or percent-encoding once more all name no route, and would be
// logged as sent. A path with a "webhooks" segment, so spelled, keeps the
// segments before it, the module slug (a segment that is not slug-shaped
// is cut like the token) and the token's first 6 characters, enough to
// tell tokens apart; later segments are dropped. Other paths are kept.
func redactInboundPath(p string) string {
	norm := p
	for range 3 {
		u, err := url.PathUnescape(norm)
		if err != nil || u == norm {
			break
		}
		norm = u
	}
	segs := strings.FieldsFunc(norm, func(r rune) bool { return r == '/' || r == '\\' })
	i := slices.IndexFunc(segs, isWebhooksSegment)
	if i < 0 {
		return p
	}
	out := segs[:i+1]
	if rest := segs[i+1:]; len(rest) > 0 {
		if slug := rest[0]; len(rest) > 1 && slugShaped(slug) {
			out = append(out, slug)
			rest = rest[1:]
		}
		out = append(out, firstChars(rest[0], 6)+"…")
	}
	return "/" + strings.Join(out, "/")
}

// isWebhooksSegment reports whether seg is "webhooks" in any case, or
// starts with it and goes on with what no slug holds ("webhooks;x").
func isWebhooksSegment(seg string) bool {
	const w = "webhooks"
	if len(seg) < len(w) || !strings.EqualFold(seg[:len(w)], w) {
		return false
	}
	return len(seg) == len(w) || !isSlugByte(seg[len(w)])
}

// slugShaped reports whether s could be a module slug (models' rule: 1-63
// of a-z, 0-9, '-' and '_', not starting with either of those two).
func slugShaped(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[0] == '_' {
		return false
	}
	for i := range len(s) {
		if !isSlugByte(s[i]) {
			return false
		}
	}
	return true
}

func isSlugByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-' || b == '_'
}

// firstChars returns the first n characters of s.
func firstChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// checkParams refuses path and query parameters that no stored value can
// equal, NUL or invalid UTF-8, before they reach a query that PostgreSQL
// would refuse with an error: such a path names nothing (404, the inbound
// webhook's own 404 on its route), such a query parameter is bad (400).
func (s *Server) checkParams(c *gin.Context) {
	for _, p := range c.Params {
		if !cleanParam(p.Value) {
			if c.FullPath() == inboundRoute {
				s.fail(c, errNoInbound)
			} else {
				s.fail(c, models.ErrNotFound)
			}
			return
		}
	}
	if c.Request.URL.RawQuery == "" {
		c.Next()
		return
	}
	for name, values := range c.Request.URL.Query() {
		for _, v := range values {
			if !cleanParam(name) || !cleanParam(v) {
				s.fail(c, invalid("query parameters must be valid UTF-8 without NUL"))
				return
			}
		}
	}
	c.Next()
}

func cleanParam(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// recover turns a panic into a 500 that shows nothing of it.
func (s *Server) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(c.Request.Context(), "panic", "request_id", requestID(c), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				failCode(c, http.StatusInternalServerError, codeInternal, "an internal error occurred; quote the request id when reporting it")
			}
			c.Abort()
		}
	}()
	c.Next()
}

// authenticate resolves the bearer key. Expired and revoked keys are still
// attributed to their tenant in the access log.
func (s *Server) authenticate(c *gin.Context) {
	h := c.GetHeader("Authorization")
	secret, ok := bearer(h)
	if !ok {
		// How to send it, without repeating what was sent: it may be the
		// key itself.
		if h == "" {
			s.fail(c, errNoAuthorization)
		} else {
			s.fail(c, errNotBearer)
		}
		return
	}
	k, err := s.store.Authenticate(c.Request.Context(), secret)
	cl := callOf(c)
	if k != nil {
		cl.tenantID, cl.keyID = k.TenantID, k.ID
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	cl.key = k
	c.Next()
}

// Answers to a call without a usable Authorization header: the hint is
// the one thing a newcomer needs (curl -H "Authorization: rh_…" is the
// usual first mistake).
var (
	errNoAuthorization = &models.Error{Kind: models.KindUnauthorized, Message: `an API key is required; send the key as "Authorization: Bearer rh_…"`}
	errNotBearer       = &models.Error{Kind: models.KindUnauthorized, Message: `the Authorization header is not a bearer token; send the key as "Authorization: Bearer rh_…"`}
)

func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// rateLimit spends one request of the key's per-minute budget. When the
// limiter itself fails (Redis down) the request passes: the limit protects
// the service, and a broken limiter must not take the API down with it.
func (s *Server) rateLimit(c *gin.Context) {
	k := callOf(c).key
	res, err := s.limiter.Allow(c.Request.Context(), limitKey(k), k.RateLimitPerMinute)
	if err != nil {
		s.limiterFailed(c, err)
		c.Next()
		return
	}
	if !s.applyLimit(c, res) {
		return
	}
	c.Next()
}

// limitKey names a key's budget in the limiter.
func limitKey(k *models.APIKey) string { return "key:" + k.ID }

// limiterFailed notes a limiter that failed; the request it was asked
// about passes.
func (s *Server) limiterFailed(c *gin.Context, err error) {
	s.metrics.limiterErrors.Inc()
	s.log.WarnContext(c.Request.Context(), "rate limiter failed; letting the request through", "request_id", requestID(c), "error", err)
}

// applyLimit sets the rate-limit headers and, when the budget is spent,
// answers 429; it reports whether the request may go on.
func (s *Server) applyLimit(c *gin.Context, res ratelimit.Result) bool {
	h := c.Writer.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(res.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.now().Add(res.ResetAfter).Add(time.Second-1).Unix(), 10))
	if res.Allowed {
		return true
	}
	s.metrics.rateLimited.Inc()
	retry := max(1, int(math.Ceil(res.RetryAfter.Seconds())))
	h.Set("Retry-After", strconv.Itoa(retry))
	c.AbortWithStatusJSON(http.StatusTooManyRequests, errorBody{
		Error: codeRateLimited, Message: fmt.Sprintf("rate limit of %d requests per minute exceeded", res.Limit),
		RequestID: requestID(c), Limit: res.Limit, RetryAfter: retry,
	})
	return false
}

// requireAdmin admits admin keys only.
func (s *Server) requireAdmin(c *gin.Context) {
	if !callOf(c).key.Admin {
		forbidden(c, "admin")
		return
	}
	c.Next()
}

func forbidden(c *gin.Context, required string) {
	c.AbortWithStatusJSON(http.StatusForbidden, forbiddenBody(c, required))
}

// noStore marks the answers of a route that answers a credential (an API
// key, a signing secret, an inbound token, custom header values): no cache
// between the server and the caller may keep them. It is set before the
// handler runs, so that the route's every answer carries it.
func noStore(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
}
