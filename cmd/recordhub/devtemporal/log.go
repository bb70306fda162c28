package devtemporal

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"

	"github.com/recordhub/recordhub/cmd/internal/loglevel"
)

// serverSlog is the logger the embedded server and its internal clients
// write to, passing records at min or above. Below warn level the server
// writes several lines a second even when idle, which would drown
// recordhub's own log; Stop raises min to error, because while the services
// shut down one after another the system worker warns about every poll the
// frontend refuses, for a while even after Stop returns. Errors that need
// no operator are dropped too (see transientError).
func serverSlog(l *slog.Logger, min *slog.LevelVar) *slog.Logger {
	return slog.New(quietHandler{Handler: loglevel.Filter(l.Handler(), min), min: min}).With("component", "temporal")
}

// benignWarnings are the beginnings of warnings the server logs at every
// start about features recordhub does not use.
var benignWarnings = []string{
	"HTTP API port has not been set. Nexus HTTP endpoints will not be available.",
}

// quietHandler drops, from the records its level filter lets through,
// the benign warnings and transient errors.
type quietHandler struct {
	slog.Handler // loglevel.Filter at min
	min          *slog.LevelVar
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, prefix := range benignWarnings {
		if strings.HasPrefix(r.Message, prefix) {
			return nil
		}
	}
	if r.Level >= slog.LevelError && transientError(r, h.min.Level() >= slog.LevelError) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// transientError reports whether an error the server logs is one of its
// own start or stop, which no operator can act on: its system worker
// calling the frontend before the frontend is ready (it retries), or, once
// Stop has begun (stopping), an operation cut short by the stop (the
// workflow task it belonged to runs again after the next start). ERROR in
// recordhub's log means an operator must act.
func transientError(r slog.Record, stopping bool) bool {
	transient := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "error" {
			return true
		}
		msg := a.Value.String()
		transient = strings.Contains(msg, "Frontend is not healthy yet") ||
			stopping && strings.Contains(msg, context.Canceled.Error())
		return false
	})
	return transient
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{Handler: h.Handler.WithGroup(name), min: h.min}
}

// serverLogger adapts slog to the server's logger interface. Panic and Fatal
// are logged as errors and return: the server must never end the process it
// is embedded in. While the server is being built and started (starting
// set and true), Fatal also panics with a fatalError, which Start recovers
// into an error: the server logs Fatal where it cannot go on (a gRPC
// listener it could not open), and going on would hand a nil listener to
// a goroutine that panics out of reach.
type serverLogger struct {
	log      *slog.Logger
	starting *atomic.Bool
}

// fatalError is what Fatal panics with while the server starts.
type fatalError struct{ msg string }

func (e fatalError) Error() string { return e.msg }

var _ log.Logger = serverLogger{}

func (l serverLogger) Debug(msg string, tags ...tag.Tag)  { l.emit(slog.LevelDebug, msg, tags) }
func (l serverLogger) Info(msg string, tags ...tag.Tag)   { l.emit(slog.LevelInfo, msg, tags) }
func (l serverLogger) Warn(msg string, tags ...tag.Tag)   { l.emit(slog.LevelWarn, msg, tags) }
func (l serverLogger) Error(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) DPanic(msg string, tags ...tag.Tag) { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Panic(msg string, tags ...tag.Tag)  { l.emit(slog.LevelError, msg, tags) }
func (l serverLogger) Fatal(msg string, tags ...tag.Tag) {
	l.emit(slog.LevelError, msg, tags)
	if l.starting != nil && l.starting.Load() {
		for _, t := range tags {
			if t.Key() == "error" {
				msg = fmt.Sprintf("%s: %v", msg, t.Value())
			}
		}
		panic(fatalError{msg: msg})
	}
}

func (l serverLogger) emit(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return // before converting tags, which is not cheap
	}
	attrs := make([]slog.Attr, len(tags))
	for i, t := range tags {
		attrs[i] = slog.Any(t.Key(), t.Value())
	}
	l.log.LogAttrs(ctx, level, msg, attrs...)
}
