package activities

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/recordhub/recordhub/models"
)

// tracing is the client span of an attempt's request; nil when tracing is
// off, so that an attempt then costs nothing more.
type tracing struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

func newTracing(tp trace.TracerProvider, p propagation.TextMapPropagator) *tracing {
	if tp == nil {
		return nil
	}
	if p == nil {
		p = propagation.TraceContext{}
	}
	return &tracing{tracer: tp.Tracer("github.com/recordhub/recordhub/activities"), propagator: p}
}

// start begins the client span of req, a child of the activity's span, and
// puts its context into req's headers (traceparent), so that the receiver
// may continue the trace. The span names no URL: endpoint URLs may carry
// credentials in their path or query. A broker endpoint's span is a
// producer's, "publish webhook", naming the broker's host and the routing
// key or subject (the message carries traceparent as a header).
func (t *tracing) start(req *http.Request, in AttemptInput, attempt int, broker *brokerDest) (*http.Request, trace.Span) {
	name, kind := "POST webhook", trace.SpanKindClient
	attrs := []attribute.KeyValue{
		attribute.String("server.address", req.URL.Hostname()),
		attribute.String("recordhub.event_id", in.EventID),
		attribute.String("recordhub.endpoint_id", in.EndpointID),
		attribute.Int("recordhub.attempt", attempt),
	}
	if broker == nil {
		attrs = append(attrs, attribute.String("http.request.method", http.MethodPost))
	} else {
		system := "rabbitmq"
		if broker.url.Kind == models.DestinationNATS {
			system = "nats"
		}
		name, kind = "publish webhook", trace.SpanKindProducer
		attrs = append(attrs, attribute.String("messaging.system", system), attribute.String("messaging.destination.name", broker.target))
	}
	ctx, span := t.tracer.Start(req.Context(), name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	t.propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return req.WithContext(ctx), span
}

// end records the attempt's outcome on span and ends it.
func (t *tracing) end(span trace.Span, row *models.WebhookDelivery, f *failure) {
	if row.ResponseStatus != nil {
		span.SetAttributes(attribute.Int("http.response.status_code", *row.ResponseStatus))
	}
	if f != nil {
		span.SetAttributes(attribute.String("error.type", f.code))
		span.SetStatus(codes.Error, f.code)
	}
	span.End()
}
