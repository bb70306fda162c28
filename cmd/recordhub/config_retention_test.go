package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// TestConfigRetention: RECORDHUB_RETENTION sets every kind's retention,
// each override its own kind's; 0 keeps for ever; anything but a duration
// of zero or more is an error naming its variable.
func TestConfigRetention(t *testing.T) {
	const day = 24 * time.Hour
	all := func(d time.Duration) map[models.PurgeKind]time.Duration {
		return map[models.PurgeKind]time.Duration{
			models.PurgeAccessLogs: d, models.PurgeDeliveries: d, models.PurgeEvents: d, models.PurgeInboundEvents: d,
			models.PurgeIdempotencyKeys: day,
		}
	}
	for _, c := range []struct {
		name    string
		env     map[string]string
		want    map[models.PurgeKind]time.Duration
		purges  bool
		wantErr string
	}{
		{name: "default", env: nil, want: all(720 * time.Hour), purges: true},
		{name: "global", env: map[string]string{"RECORDHUB_RETENTION": "168h"}, want: all(7 * day), purges: true},
		// Idempotency keys are purged past their TTL whatever the rest.
		{name: "kept for ever", env: map[string]string{"RECORDHUB_RETENTION": "0"}, want: all(0), purges: true},
		{
			name: "overrides",
			env: map[string]string{
				"RECORDHUB_RETENTION": "0", "RECORDHUB_RETENTION_ACCESS_LOGS": "24h", "RECORDHUB_RETENTION_DELIVERIES": "48h",
				"RECORDHUB_RETENTION_EVENTS": "72h", "RECORDHUB_RETENTION_INBOUND_EVENTS": "96h",
			},
			want: map[models.PurgeKind]time.Duration{
				models.PurgeAccessLogs: day, models.PurgeDeliveries: 2 * day, models.PurgeEvents: 3 * day, models.PurgeInboundEvents: 4 * day,
				models.PurgeIdempotencyKeys: day,
			},
			purges: true,
		},
		{
			name: "one kind kept for ever",
			env:  map[string]string{"RECORDHUB_RETENTION_EVENTS": "0s"},
			want: map[models.PurgeKind]time.Duration{
				models.PurgeAccessLogs: 720 * time.Hour, models.PurgeDeliveries: 720 * time.Hour, models.PurgeEvents: 0, models.PurgeInboundEvents: 720 * time.Hour,
				models.PurgeIdempotencyKeys: day,
			},
			purges: true,
		},
		{
			name: "idempotency TTL", env: map[string]string{"RECORDHUB_IDEMPOTENCY_TTL": "2h"},
			want: func() map[models.PurgeKind]time.Duration {
				m := all(720 * time.Hour)
				m[models.PurgeIdempotencyKeys] = 2 * time.Hour
				return m
			}(),
			purges: true,
		},
		{name: "idempotency TTL of 0", env: map[string]string{"RECORDHUB_IDEMPOTENCY_TTL": "0"}, wantErr: "RECORDHUB_IDEMPOTENCY_TTL must be"},
		{name: "negative", env: map[string]string{"RECORDHUB_RETENTION": "-1h"}, wantErr: "RECORDHUB_RETENTION must be"},
		{name: "garbage", env: map[string]string{"RECORDHUB_RETENTION": "a month"}, wantErr: "RECORDHUB_RETENTION must be"},
		{name: "number without unit", env: map[string]string{"RECORDHUB_RETENTION": "30"}, wantErr: "RECORDHUB_RETENTION must be"},
		{name: "bad access logs", env: map[string]string{"RECORDHUB_RETENTION_ACCESS_LOGS": "-5m"}, wantErr: "RECORDHUB_RETENTION_ACCESS_LOGS must be"},
		{name: "bad deliveries", env: map[string]string{"RECORDHUB_RETENTION_DELIVERIES": "x"}, wantErr: "RECORDHUB_RETENTION_DELIVERIES must be"},
		{name: "bad events", env: map[string]string{"RECORDHUB_RETENTION_EVENTS": "1d"}, wantErr: "RECORDHUB_RETENTION_EVENTS must be"},
		{name: "bad inbound events", env: map[string]string{"RECORDHUB_RETENTION_INBOUND_EVENTS": "-1s"}, wantErr: "RECORDHUB_RETENTION_INBOUND_EVENTS must be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := configFromEnv(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(cfg.Retention, c.want); diff != "" {
				t.Errorf("retention (-got +want):\n%s", diff)
			}
			if got := cfg.purges(); got != c.purges {
				t.Errorf("purges() = %v, want %v", got, c.purges)
			}
		})
	}
}
