package devtemporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.temporal.io/server/common/log/tag"
)

// TestServerLogDropsTransientErrors: the errors the server logs around its
// own start and stop, seen in recordhub's log on every start and on stops
// with workflows in flight, never reach it; other errors do, and a
// canceled operation is an error while the server runs.
func TestServerLogDropsTransientErrors(t *testing.T) {
	canceled := fmt.Errorf("update workflow: %w", context.Canceled)
	tests := []struct {
		name     string
		stopping bool
		msg      string
		err      error
		want     bool // the line reaches the log
	}{
		{"frontend not ready at start", false, "service failures", errors.New("Frontend is not healthy yet"), false},
		{"operation cut short by the stop", true, "Update workflow execution operation failed.", canceled, false},
		{"canceled operation while running", false, "Update workflow execution operation failed.", canceled, true},
		{"any other error while running", false, "Persistent store operation failure", errors.New("database is locked"), true},
		{"any other error while stopping", true, "Persistent store operation failure", errors.New("database is locked"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			level := new(slog.LevelVar)
			level.Set(slog.LevelWarn)
			if tc.stopping {
				level.Set(slog.LevelError) // as Stop does
			}
			l := serverLogger{log: serverSlog(slog.New(slog.NewJSONHandler(&buf, nil)), level)}
			l.Error(tc.msg, tag.Error(tc.err))
			if got := strings.Contains(buf.String(), tc.msg); got != tc.want {
				t.Errorf("logged %v (%q), want %v", got, buf.String(), tc.want)
			}
		})
	}
}
