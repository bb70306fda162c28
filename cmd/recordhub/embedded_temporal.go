//go:build !noembedtemporal

package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/recordhub/recordhub/cmd/recordhub/devtemporal"
)

// startEmbeddedTemporal starts the Temporal dev server in this process (build
// with -tags noembedtemporal to leave it out of the binary) and
// returns its frontend address and how to stop it.
func startEmbeddedTemporal(ctx context.Context, cfg Config, log *slog.Logger) (string, func() error, error) {
	srv, err := devtemporal.Start(ctx, devtemporalConfig(cfg, log))
	if err != nil {
		return "", nil, err
	}
	if cfg.TemporalUIAddr != "" {
		log.Info("embedded Temporal Web UI", "url", srv.UIURL(), "write_actions", cfg.TemporalUIWrite)
	}
	return srv.Address(), srv.Stop, nil
}

func devtemporalConfig(cfg Config, log *slog.Logger) devtemporal.Config {
	return devtemporal.Config{
		DataDir:   filepath.Clean(cfg.DataDir),
		Port:      cfg.TemporalPort,
		Namespace: cfg.TemporalNamespace,
		Retention: cfg.TemporalRetention,
		UIAddr:    cfg.TemporalUIAddr,
		UIWrite:   cfg.TemporalUIWrite,
		Logger:    log,
	}
}
