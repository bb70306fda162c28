package main

import (
	"strings"
	"testing"
	"time"
)

// TestConfigEndpointDisableAfter: RECORDHUB_ENDPOINT_DISABLE_AFTER is a
// duration of zero (never disable) or more, 120h by default; anything else
// is an error naming the variable.
func TestConfigEndpointDisableAfter(t *testing.T) {
	for _, c := range []struct {
		value   string
		want    time.Duration
		wantErr bool
	}{
		{value: "", want: 120 * time.Hour},
		{value: "48h", want: 48 * time.Hour},
		{value: "0", want: 0},
		{value: "-1h", wantErr: true},
		{value: "5 days", wantErr: true},
		{value: "30", wantErr: true},
	} {
		t.Run(c.value, func(t *testing.T) {
			env := map[string]string{}
			if c.value != "" {
				env["RECORDHUB_ENDPOINT_DISABLE_AFTER"] = c.value
			}
			cfg, err := configFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if c.wantErr {
				if err == nil || !strings.Contains(err.Error(), "RECORDHUB_ENDPOINT_DISABLE_AFTER") {
					t.Fatalf("err %v, want one naming RECORDHUB_ENDPOINT_DISABLE_AFTER", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.EndpointDisableAfter != c.want {
				t.Errorf("EndpointDisableAfter = %s, want %s", cfg.EndpointDisableAfter, c.want)
			}
		})
	}
}
