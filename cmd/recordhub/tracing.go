package main

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// TracingConfig is the tracing part of the configuration, from the
// standard OpenTelemetry variables. Everything else the OTLP
// exporter reads itself (OTEL_EXPORTER_OTLP_HEADERS, …_TIMEOUT, …_INSECURE,
// certificates), as do the SDK (OTEL_TRACES_SAMPLER, OTEL_BSP_*) and the
// resource (OTEL_RESOURCE_ATTRIBUTES).
type TracingConfig struct {
	// Enabled: OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, and neither
	// OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none.
	Enabled bool
	// Protocol is "http/protobuf" (the default) or "grpc"
	// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL).
	Protocol string
	// ServiceName is OTEL_SERVICE_NAME, "recordhub" when unset.
	ServiceName string
}

// tracingFromEnv reads TracingConfig; the string is a configuration error.
func tracingFromEnv(getenv func(string) string) (TracingConfig, string) {
	c := TracingConfig{
		Enabled: (getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") &&
			!strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") && getenv("OTEL_TRACES_EXPORTER") != "none",
		Protocol:    envOr(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", envOr(getenv, "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")),
		ServiceName: envOr(getenv, "OTEL_SERVICE_NAME", "recordhub"),
	}
	if c.Protocol != "http/protobuf" && c.Protocol != "grpc" {
		return c, fmt.Sprintf("OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or grpc, not %q", c.Protocol)
	}
	return c, ""
}

// tracing is what traces this process. A nil *tracing is tracing off:
// nothing is installed, no span is made and no header is read or sent.
type tracing struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	// shutdown flushes and stops the exporter; nil when the provider is
	// not this process's own (tests).
	shutdown func(context.Context) error
}

// startTracing returns the process's tracing: nil when it is off, else an
// SDK tracer provider exporting over OTLP in batches, and W3C Trace Context
// on the wire. The provider is not made global: each part that traces is
// given it.
func startTracing(ctx context.Context, cfg TracingConfig) (*tracing, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch cfg.Protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// over the default name.
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", cfg.ServiceName), attribute.String("service.version", appVersion())),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &tracing{provider: tp, propagator: propagation.TraceContext{}, shutdown: tp.Shutdown}, nil
}

// close flushes the spans still buffered; harmless on nil.
func (t *tracing) close(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("flush traces: %w", err)
	}
	return nil
}

// temporalInterceptors are the Temporal client's (and so its worker's)
// interceptors: the SDK's OpenTelemetry one when tracing is on, which
// carries the span context in workflow and activity headers and makes
// their spans. It adds headers, not commands: histories replay unchanged.
func (t *tracing) temporalInterceptors() ([]interceptor.ClientInterceptor, error) {
	if t == nil {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: t.provider.Tracer("go.temporal.io/sdk"),
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return []interceptor.ClientInterceptor{i}, nil
}

// tracerProvider and textPropagator are what the API and the deliverer are
// given: nil when tracing is off.
func (t *tracing) tracerProvider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.provider
}

func (t *tracing) textPropagator() propagation.TextMapPropagator {
	if t == nil {
		return nil
	}
	return t.propagator
}
