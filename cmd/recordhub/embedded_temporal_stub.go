//go:build noembedtemporal

package main

import (
	"context"
	"errors"
	"log/slog"
)

func startEmbeddedTemporal(context.Context, Config, *slog.Logger) (string, func() error, error) {
	return "", nil, errors.New("this binary was built without the embedded Temporal server (tag noembedtemporal): set TEMPORAL_ADDRESS")
}
