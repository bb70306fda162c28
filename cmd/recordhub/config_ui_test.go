//go:build !noembedtemporal

package main

import (
	"log/slog"
	"testing"
)

// TestConfigTemporalUIWrite checks that RECORDHUB_TEMPORAL_UI_WRITE parses
// strictly, is off by default and reaches the embedded server's config.
func TestConfigTemporalUIWrite(t *testing.T) {
	for _, c := range []struct {
		value string
		set   bool
		want  bool
		ok    bool
	}{
		{"", false, false, true},
		{"", true, false, true},
		{"false", true, false, true},
		{"0", true, false, true},
		{"true", true, true, true},
		{"1", true, true, true},
		{"yes", true, false, false},
		{"TRUE", true, false, false},
		{" true", true, false, false},
	} {
		cfg, err := configFromEnv(func(k string) (string, bool) {
			if k == "RECORDHUB_TEMPORAL_UI_WRITE" && c.set {
				return c.value, true
			}
			return "", false
		})
		if (err == nil) != c.ok {
			t.Errorf("RECORDHUB_TEMPORAL_UI_WRITE=%q (set %v): err %v, want ok=%v", c.value, c.set, err, c.ok)
			continue
		}
		if !c.ok {
			continue
		}
		if got := devtemporalConfig(cfg, slog.New(slog.DiscardHandler)).UIWrite; got != c.want {
			t.Errorf("RECORDHUB_TEMPORAL_UI_WRITE=%q (set %v): devtemporal UIWrite = %v, want %v", c.value, c.set, got, c.want)
		}
	}
}
