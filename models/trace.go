package models

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// traceContext is the format of Event.TraceParent: W3C Trace Context,
// whatever propagator the process uses on the wire.
var traceContext propagation.TraceContext

// stampTrace gives events without one the traceparent of ctx's span. With
// tracing off ctx holds no valid span context and nothing is done: one
// context lookup.
func stampTrace(ctx context.Context, events []Event) {
	if ctx == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	for i := range events {
		if events[i].TraceParent == "" {
			events[i].TraceParent = carrier.Get("traceparent")
		}
	}
}

// TraceContext returns ctx carrying the event's stored span context as a
// remote parent, so that what the event causes joins the trace of what
// wrote it; ctx itself when the event has none.
func (e *Event) TraceContext(ctx context.Context) context.Context {
	if e.TraceParent == "" {
		return ctx
	}
	sctx := traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": e.TraceParent})
	if !trace.SpanContextFromContext(sctx).IsValid() {
		return ctx
	}
	return sctx
}

// withTrace is the shared transaction tx as one write of the group sees
// it: with the span of the write's caller, for the events it writes, but
// not its cancellation (see commitGroup). Without a span, tx itself: with
// tracing off a write costs nothing more.
func withTrace(ctx context.Context, tx *gorm.DB) *gorm.DB {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return tx
	}
	return tx.WithContext(context.WithoutCancel(ctx))
}
