package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracing gives every request a server span; it is installed only when
// tracing is on, so that it costs nothing otherwise.
type tracing struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// handle starts the request's span and puts it into the request's context,
// where record changes and inbound calls find it for the events they write.
// The span is named after the route, never the path, and records no URL:
// inbound webhook paths carry their token. An inbound call, whose sender
// is anyone on the internet, starts a trace of its own; other callers'
// traceparent is continued.
func (t *tracing) handle(c *gin.Context) {
	route := c.FullPath()
	name := c.Request.Method
	if route != "" {
		name += " " + route
	}
	ctx := c.Request.Context()
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", c.Request.Method)),
	}
	if route != "" {
		opts = append(opts, trace.WithAttributes(attribute.String("http.route", route)))
	}
	if route == inboundRoute {
		opts = append(opts, trace.WithNewRoot())
	} else {
		ctx = t.propagator.Extract(ctx, propagation.HeaderCarrier(c.Request.Header))
	}
	ctx, span := t.tracer.Start(ctx, name, opts...)
	defer span.End()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	status := c.Writer.Status()
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}
