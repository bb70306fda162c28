package main

import (
	"log/slog"
	"testing"
	"time"
)

// TestTemporalClientReconnects holds what lets events written while
// Temporal was down arrive soon after it answers again: the client retries
// its connection at most half a second apart, where gRPC's default backoff
// grows to 120 s. TestProductionShape sees the events arrive; this is the
// part of it no clock has to judge.
func TestTemporalClientReconnects(t *testing.T) {
	opts, err := temporalClientOptions("127.0.0.1:7233", Config{TemporalNamespace: "default"}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	// grpc.DialOption is opaque: the one option there is must be the
	// WithConnectParams(reconnectBackoff) the client is given.
	if n := len(opts.ConnectionOptions.DialOptions); n != 1 {
		t.Errorf("the Temporal client has %d dial options, want 1 (grpc.WithConnectParams(reconnectBackoff))", n)
	}
	b := reconnectBackoff.Backoff
	if b.MaxDelay <= 0 || b.MaxDelay > 500*time.Millisecond {
		t.Errorf("reconnect backoff grows to %v, want at most 500ms", b.MaxDelay)
	}
	if b.BaseDelay <= 0 || b.BaseDelay > b.MaxDelay || b.Multiplier < 1 {
		t.Errorf("reconnect backoff %+v: want a first delay above 0, at most the largest, growing", b)
	}
}
