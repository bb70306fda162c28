package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

func TestTracingFromEnv(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     map[string]string
		want    TracingConfig
		wantErr bool
	}{
		{"off by default", nil, TracingConfig{Protocol: "http/protobuf", ServiceName: "recordhub"}, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"},
			TracingConfig{Enabled: true, Protocol: "http/protobuf", ServiceName: "recordhub"}, false},
		{"traces endpoint, grpc, name", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "rh-eu"},
			TracingConfig{Enabled: true, Protocol: "grpc", ServiceName: "rh-eu"}, false},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"},
			TracingConfig{Protocol: "http/protobuf", ServiceName: "recordhub"}, false},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"},
			TracingConfig{Protocol: "http/protobuf", ServiceName: "recordhub"}, false},
		{"bad protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, TracingConfig{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := configFromEnv(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			if c.wantErr {
				if err == nil {
					t.Fatalf("configFromEnv accepted %v", c.env)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Tracing != c.want {
				t.Errorf("got %+v, want %+v", cfg.Tracing, c.want)
			}
		})
	}
}

// TestStartTracing: off installs nothing; on exports the spans to the
// OTLP/HTTP endpoint of OTEL_EXPORTER_OTLP_ENDPOINT when closed.
func TestStartTracing(t *testing.T) {
	ctx := context.Background()
	off, err := startTracing(ctx, TracingConfig{Protocol: "http/protobuf", ServiceName: "recordhub"})
	if err != nil || off != nil {
		t.Fatalf("tracing off: %v, %v; want nil, nil", off, err)
	}
	if off.tracerProvider() != nil || off.textPropagator() != nil || off.close(ctx) != nil {
		t.Error("a nil tracing gives something")
	}
	if ics, err := off.temporalInterceptors(); err != nil || ics != nil {
		t.Errorf("tracing off, temporal interceptors %v, %v", ics, err)
	}

	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	on, err := startTracing(ctx, TracingConfig{Enabled: true, Protocol: "http/protobuf", ServiceName: "recordhub"})
	if err != nil || on == nil {
		t.Fatalf("tracing on: %v, %v", on, err)
	}
	if ics, err := on.temporalInterceptors(); err != nil || len(ics) != 1 {
		t.Errorf("tracing on, temporal interceptors %v, %v", ics, err)
	}
	_, span := on.tracerProvider().Tracer("test").Start(ctx, "a span")
	span.End()
	if err := on.close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("the collector got %d exports, want 1", n)
	}
}
