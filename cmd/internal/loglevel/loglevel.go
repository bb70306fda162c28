// Package loglevel holds the one slog level filter of recordhub's
// commands: put in front of a handler, it lets through only records at a
// level or above, for a chatty library (the Temporal SDK, the embedded
// server) whose debug and info lines would drown the service's own.
package loglevel

import (
	"context"
	"log/slog"
)

// Filter returns a handler that passes to h the records at min or above.
// min may change while the handler is in use: a *slog.LevelVar.
func Filter(h slog.Handler, min slog.Leveler) slog.Handler {
	return filter{Handler: h, min: min}
}

type filter struct {
	slog.Handler
	min slog.Leveler
}

func (f filter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min.Level() && f.Handler.Enabled(ctx, l)
}

func (f filter) WithAttrs(a []slog.Attr) slog.Handler {
	return filter{f.Handler.WithAttrs(a), f.min}
}

func (f filter) WithGroup(n string) slog.Handler {
	return filter{f.Handler.WithGroup(n), f.min}
}
