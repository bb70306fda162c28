package loglevel

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestFilter: records below the level are dropped, the level can change
// while the handler is in use, and attributes and groups keep the filter.
func TestFilter(t *testing.T) {
	var buf bytes.Buffer
	var min slog.LevelVar
	min.Set(slog.LevelWarn)
	l := slog.New(Filter(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), &min)).With("c", "x").WithGroup("g")
	l.Info("info dropped")
	l.Warn("warn kept")
	min.Set(slog.LevelError)
	l.Warn("warn dropped")
	l.Error("error kept", "k", 1)
	got := buf.String()
	for _, want := range []string{`msg="warn kept" c=x`, `msg="error kept" c=x g.k=1`} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "dropped") {
		t.Errorf("log holds a record below the level:\n%s", got)
	}
	if Filter(slog.DiscardHandler, slog.LevelInfo).Enabled(t.Context(), slog.LevelDebug) {
		t.Error("debug enabled under an info filter")
	}
}
