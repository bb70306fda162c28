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

// TestConfigTemporalUIURL: the console's link base is the explicit
// RECORDHUB_TEMPORAL_UI_URL (an absolute http(s) URL, trailing slash
// dropped), else the embedded UI's address when it runs, else none.
func TestConfigTemporalUIURL(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
		ok   bool
	}{
		{map[string]string{}, "http://127.0.0.1:8233", true},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_ADDR": "0.0.0.0:9000"}, "http://localhost:9000", true},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_ADDR": "[::]:9000"}, "http://localhost:9000", true},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_ADDR": ":9000"}, "http://localhost:9000", true},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_ADDR": ""}, "", true},
		{map[string]string{"TEMPORAL_ADDRESS": "temporal:7233"}, "", true},
		{map[string]string{"TEMPORAL_ADDRESS": "temporal:7233", "RECORDHUB_TEMPORAL_UI_URL": "https://temporal.example.com/"}, "https://temporal.example.com", true},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_URL": "https://ops.example.com/temporal"}, "https://ops.example.com/temporal", true},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_URL": "javascript:alert(1)"}, "", false},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_URL": "temporal.example.com"}, "", false},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_URL": "https://temporal.example.com/?x=1"}, "", false},
		{map[string]string{"RECORDHUB_TEMPORAL_UI_URL": "https://u:p@temporal.example.com"}, "", false},
	} {
		cfg, err := configFromEnv(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
		if (err == nil) != c.ok {
			t.Errorf("%v: err %v, want ok=%v", c.env, err, c.ok)
			continue
		}
		if c.ok && cfg.TemporalUIURL != c.want {
			t.Errorf("%v: TemporalUIURL %q, want %q", c.env, cfg.TemporalUIURL, c.want)
		}
	}
}
