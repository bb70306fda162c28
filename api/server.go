// Package api is recordhub's HTTP interface: the records API under /api, the
// admin API under /api/admin, and the operational endpoints.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/recordhub/recordhub/api/changefeed"
	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models"
)

// Limiter takes requests from a per-minute budget: one for each call,
// and n more at once, or none, for a batch of n operations.
type Limiter interface {
	Allow(ctx context.Context, key string, perMinute int) (ratelimit.Result, error)
	AllowN(ctx context.Context, key string, perMinute, n int) (ratelimit.Result, error)
}

// LogSink takes access-log rows without blocking; false means dropped.
type LogSink interface {
	Enqueue(l models.AccessLog) bool
}

// Check is one readiness probe, such as the database or Redis.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Deps are the server's collaborators, built in cmd.
type Deps struct {
	Store   *models.Store
	Limiter Limiter
	Logs    LogSink
	// Registry receives the server's metrics and is served at /metrics.
	Registry *prometheus.Registry
	Log      *slog.Logger
	// DefaultRateLimit is the per-minute limit of keys created without one;
	// zero means models.DefaultRateLimitPerMinute.
	DefaultRateLimit int
	// Ready lists the checks of /readyz.
	Ready []Check
	// Now returns the time; time.Now when nil.
	Now func() time.Time
	// CheckURL refuses webhook destinations on blocked networks (422
	// invalid_url); without it no endpoint can be created.
	CheckURL func(ctx context.Context, rawURL string) error
	// Replayer starts replays; without it replay answers 503.
	Replayer Replayer
	// Recoverer starts bulk recoveries; without it recover answers 503.
	Recoverer Recoverer
	// Resyncer starts resyncs; without it resync answers 503.
	Resyncer Resyncer
	// PublicURL is the base URL that inbound webhook URLs are given under
	// (RECORDHUB_PUBLIC_URL); when empty, the address the admin called.
	PublicURL string
	// OpsOnly serves only /healthz, /readyz and /metrics (a worker process).
	OpsOnly bool
	// TracerProvider, when set, gives every request a server span, which
	// the events a request writes carry on (Propagator reads callers'
	// traceparent, W3C Trace Context when nil); nil traces nothing.
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	// Console, when set, is served at /console (the support console).
	Console http.Handler
	// HeavyReadTimeout bounds a heavy admin read (endpoint stats, the
	// deliveries, access-log and inbound-event lists, key usage): waiting
	// for a connection of the store's heavy-read pool and running;
	// models.DefaultHeavyReadTimeout when zero.
	HeavyReadTimeout time.Duration
	// IdempotencyTTL is how long the answer of a write sent with an
	// Idempotency-Key answers its retries (RECORDHUB_IDEMPOTENCY_TTL);
	// DefaultIdempotencyTTL when zero.
	IdempotencyTTL time.Duration
	// Changes bounds the change feed's streams.
	Changes ChangesOptions
	// ThrottleUnheld, when set, refuses endpoint throttles with this
	// reason: no process here can hold one (an API replica without Redis).
	ThrottleUnheld string
}

// inboundRoute is the public inbound webhook.
const inboundRoute = "/api/webhooks/:moduleSlug/:token"

// Server serves the HTTP API.
type Server struct {
	store            *models.Store
	limiter          Limiter
	logs             LogSink
	log              *slog.Logger
	metrics          *metrics
	registry         *prometheus.Registry
	defaultRateLimit int
	ready            []Check
	now              func() time.Time
	urlCheck         func(ctx context.Context, rawURL string) error
	replayer         Replayer
	recoverer        Recoverer
	resyncer         Resyncer
	publicURL        string
	tracing          *tracing
	console          http.Handler
	engine           *gin.Engine
	outage           outageLog
	heavyReadTimeout time.Duration
	slowReads        outageLog
	idempotencyTTL   time.Duration
	feed             *changefeed.Feed
	changesOpts      ChangesOptions
	throttleUnheld   string
}

// New returns a Server with its routes.
func New(d Deps) *Server {
	gin.SetMode(gin.ReleaseMode)
	s := &Server{
		store: d.Store, limiter: d.Limiter, logs: d.Logs, log: d.Log,
		registry: d.Registry, defaultRateLimit: d.DefaultRateLimit, ready: d.Ready, now: d.Now,
		urlCheck: d.CheckURL, replayer: d.Replayer, recoverer: d.Recoverer, resyncer: d.Resyncer, publicURL: d.PublicURL,
		console: d.Console, heavyReadTimeout: d.HeavyReadTimeout, idempotencyTTL: d.IdempotencyTTL,
		throttleUnheld: d.ThrottleUnheld,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
	}
	if s.heavyReadTimeout <= 0 {
		s.heavyReadTimeout = models.DefaultHeavyReadTimeout
	}
	if s.defaultRateLimit <= 0 {
		s.defaultRateLimit = models.DefaultRateLimitPerMinute
	}
	if d.TracerProvider != nil {
		s.tracing = &tracing{tracer: d.TracerProvider.Tracer("github.com/recordhub/recordhub/api"), propagator: d.Propagator}
		if s.tracing.propagator == nil {
			s.tracing.propagator = propagation.TraceContext{}
		}
	}
	s.changesOpts = d.Changes
	if s.changesOpts.Heartbeat <= 0 {
		s.changesOpts.Heartbeat = DefaultChangesHeartbeat
	}
	if s.changesOpts.WriteTimeout <= 0 {
		s.changesOpts.WriteTimeout = DefaultChangesWriteTimeout
	}
	if s.store != nil {
		s.feed = changefeed.New(s.store, changefeed.Options{
			PerKey: d.Changes.StreamsPerKey, PerTenant: d.Changes.StreamsPerTenant,
			Poll: d.Changes.Poll, Ring: d.Changes.Ring, Log: s.log,
		})
	}
	s.metrics = newMetrics(s.registry)
	if s.feed != nil && !d.OpsOnly {
		s.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "recordhub_change_streams", Help: "Change streams open in this process.",
		}, func() float64 { return float64(s.feed.Streams()) }))
	}
	if s.store != nil && !d.OpsOnly {
		s.registry.MustRegister(newEndpointHealthCollector(s.store, s.log))
	}
	s.engine = s.routes(d.OpsOnly)
	return s
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.engine }

func (s *Server) routes(opsOnly bool) *gin.Engine {
	r := gin.New()
	// Clients are identified by the connection's address; forwarded-for
	// headers are not trusted unless a deployment puts a known proxy in front.
	_ = r.SetTrustedProxies(nil)
	if s.tracing != nil {
		r.Use(s.tracing.handle)
	}
	r.Use(s.requestID, lingerAfterTooLarge, s.observe, s.recover)

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry})))
	r.NoRoute(func(c *gin.Context) { failCode(c, http.StatusNotFound, codeNotFound, "no such route") })
	if opsOnly {
		return r
	}

	if s.console != nil {
		// The console's page and assets hold no data: every call they make
		// is to the admin API, with the key the user signs in with.
		h := gin.WrapH(s.console)
		for _, p := range []string{"/console", "/console/*asset"} {
			r.GET(p, h)
			r.HEAD(p, h)
		}
	}

	pub := r.Group("/api")
	pub.GET("/openapi.yaml", serveOpenAPI)
	r.POST(inboundRoute, s.checkParams, s.receiveInbound)

	// Every list, and every route that takes query parameters, refuses
	// those it does not take (takes); other routes ignore a query.
	// Writes sent with an Idempotency-Key are answered once (idempotent).
	authed := r.Group("/api", s.authenticate, s.rateLimit, s.checkParams, s.idempotent)
	authed.GET("/modules", s.takes(), s.listModules)
	// Path ids are checked once the key may call the route at all: a
	// non-admin key is refused the admin API whatever its path holds.
	records := authed.Group("/modules/:id/records", s.checkPathIDs)
	records.GET("", s.takes("page", "limit", "sort", "filter[]"), s.listRecords)
	records.POST("", s.createRecord)
	records.GET("/:recordId", s.getRecord)
	records.PATCH("/:recordId", s.updateRecord)
	records.DELETE("/:recordId", s.deleteRecord)
	authed.GET("/modules/:id/changes", s.checkPathIDs, s.takes("after", "limit", "types", "filter[]"), s.changes)
	authed.POST("/batch", s.takes(), s.batch)

	admin := authed.Group("/admin", s.requireAdmin, s.checkPathIDs)
	// Routes whose answers hold a credential go through noStore.
	heavy, heavyStats := s.heavyRead(nil), s.heavyRead(asksStats)
	admin.POST("/modules", s.adminCreateModule)
	admin.GET("/modules", s.takes(), s.adminListModules)
	admin.GET("/modules/:id", s.adminGetModule)
	admin.PATCH("/modules/:id", s.adminUpdateModule)
	admin.DELETE("/modules/:id", s.adminDeleteModule)
	admin.GET("/modules/:id/event-schemas", s.adminModuleEventSchemas)
	admin.PUT("/modules/:id/inbound-webhook", noStore, s.adminPutInbound)
	admin.GET("/modules/:id/inbound-webhook", noStore, s.adminGetInbound)
	admin.DELETE("/modules/:id/inbound-webhook", s.adminDeleteInbound)
	admin.POST("/modules/:id/inbound-webhook/rotate-token", noStore, s.adminRotateInboundToken)
	admin.GET("/modules/:id/inbound-events", s.takes("cursor", "page", "limit"), heavy, s.adminListInboundEvents)
	admin.POST("/modules/:id/inbound-events/:eventId/replay", s.adminReplayInboundEvent)
	admin.POST("/keys", noStore, s.adminCreateKey)
	admin.GET("/keys", s.takes("page", "limit"), s.adminListKeys)
	admin.GET("/keys/:id", s.adminGetKey)
	admin.PATCH("/keys/:id", s.adminUpdateKey)
	admin.DELETE("/keys/:id", s.adminRevokeKey)
	admin.POST("/keys/:id/rotate", noStore, s.adminRotateKey)
	admin.GET("/keys/:id/usage", s.takes("granularity", "from", "to"), heavy, s.adminKeyUsage)
	admin.GET("/access-logs", s.takes("cursor", "page", "limit", "key_id", "status", "method", "from", "to"), heavy, s.adminAccessLogs)
	admin.POST("/webhook-endpoints", noStore, s.adminCreateEndpoint)
	admin.GET("/webhook-endpoints", s.takes("page", "limit", "include"), heavyStats, s.adminListEndpoints)
	admin.GET("/webhook-endpoints/:id", s.takes("include"), heavyStats, s.adminGetEndpoint)
	admin.PATCH("/webhook-endpoints/:id", s.adminUpdateEndpoint)
	admin.DELETE("/webhook-endpoints/:id", s.adminDeleteEndpoint)
	admin.GET("/webhook-endpoints/:id/secret", noStore, s.adminEndpointSecret)
	admin.GET("/webhook-endpoints/:id/headers", noStore, s.adminEndpointHeaders)
	admin.POST("/webhook-endpoints/:id/rotate-secret", noStore, s.adminRotateEndpointSecret)
	admin.POST("/webhook-endpoints/:id/recover", s.adminRecoverEndpoint)
	admin.GET("/webhook-endpoints/:id/recoveries/:recoveryId", s.adminGetRecovery)
	admin.POST("/webhook-endpoints/:id/resync", s.adminResyncEndpoint)
	admin.GET("/webhook-endpoints/:id/resyncs/:resyncId", s.adminGetResync)
	admin.GET("/webhook-deliveries", s.takes("cursor", "page", "limit", "endpoint_id", "event_id", "record_id", "event_type", "succeeded", "since", "until", "error"), heavy, s.adminListDeliveries)
	admin.GET("/webhook-deliveries/:id", s.adminGetDelivery)
	admin.POST("/webhook-deliveries/:id/replay", s.adminReplayDelivery)
	return r
}
