package main

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
)

// TestConfigParsing checks the values the shared duration, boolean and
// network readers take and refuse, variable by variable: each keeps the
// forms it accepted before they shared a reader.
func TestConfigParsing(t *testing.T) {
	type got struct {
		AutoMigrate  bool
		UIWrite      bool
		DisableAfter time.Duration
		Timeout      time.Duration
		Retention    time.Duration
		Allow        []netip.Prefix
		BulkRunning  int
		BulkRate     int
	}
	defaults := got{AutoMigrate: true, DisableAfter: 120 * time.Hour, Timeout: 30 * time.Second, Retention: 720 * time.Hour, BulkRunning: 4, BulkRate: 20}
	with := func(f func(*got)) got { g := defaults; f(&g); return g }
	for _, c := range []struct {
		name, key, value string
		want             got
		ok               bool
	}{
		{"migrate yes", "RECORDHUB_AUTO_MIGRATE", "Yes", defaults, true},
		{"migrate NO", "RECORDHUB_AUTO_MIGRATE", "NO", with(func(g *got) { g.AutoMigrate = false }), true},
		{"migrate False", "RECORDHUB_AUTO_MIGRATE", "False", with(func(g *got) { g.AutoMigrate = false }), true},
		{"migrate 0", "RECORDHUB_AUTO_MIGRATE", "0", with(func(g *got) { g.AutoMigrate = false }), true},
		{"migrate maybe", "RECORDHUB_AUTO_MIGRATE", "maybe", got{}, false},
		{"ui write 1", "RECORDHUB_TEMPORAL_UI_WRITE", "1", with(func(g *got) { g.UIWrite = true }), true},
		{"ui write yes", "RECORDHUB_TEMPORAL_UI_WRITE", "yes", got{}, false},
		{"disable after 0", "RECORDHUB_ENDPOINT_DISABLE_AFTER", "0", with(func(g *got) { g.DisableAfter = 0 }), true},
		{"disable after 2h", "RECORDHUB_ENDPOINT_DISABLE_AFTER", "2h", with(func(g *got) { g.DisableAfter = 2 * time.Hour }), true},
		{"disable after negative", "RECORDHUB_ENDPOINT_DISABLE_AFTER", "-1h", got{}, false},
		{"timeout 5s", "RECORDHUB_WEBHOOK_TIMEOUT", "5s", with(func(g *got) { g.Timeout = 5 * time.Second }), true},
		{"timeout 0", "RECORDHUB_WEBHOOK_TIMEOUT", "0s", got{}, false},
		{"retention 0", "RECORDHUB_RETENTION", "0", with(func(g *got) { g.Retention = 0 }), true},
		{"retention negative", "RECORDHUB_RETENTION", "-1h", got{}, false},
		{"allow networks", "RECORDHUB_WEBHOOK_ALLOW_CIDRS", " 10.1.2.3/8, 192.168.1.20 ,", with(func(g *got) {
			g.Allow = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.20/32")}
		}), true},
		{"allow a name", "RECORDHUB_WEBHOOK_ALLOW_CIDRS", "localhost", got{}, false},
		{"bulk running 1", "RECORDHUB_BULK_RUNNING_PER_TENANT", "1", with(func(g *got) { g.BulkRunning = 1 }), true},
		{"bulk running 0", "RECORDHUB_BULK_RUNNING_PER_TENANT", "0", got{}, false},
		{"bulk rate 5", "RECORDHUB_BULK_RATE_PER_TENANT", "5", with(func(g *got) { g.BulkRate = 5 }), true},
		{"bulk rate 0: no pace", "RECORDHUB_BULK_RATE_PER_TENANT", "0", with(func(g *got) { g.BulkRate = -1 }), true},
		{"bulk rate negative", "RECORDHUB_BULK_RATE_PER_TENANT", "-1", got{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := configFromEnv(func(k string) (string, bool) {
				if k == c.key {
					return c.value, true
				}
				return "", false
			})
			if (err == nil) != c.ok {
				t.Fatalf("%s=%q: err %v, want ok=%v", c.key, c.value, err, c.ok)
			}
			if !c.ok {
				return
			}
			g := got{
				AutoMigrate: cfg.AutoMigrate, UIWrite: cfg.TemporalUIWrite, DisableAfter: cfg.EndpointDisableAfter,
				Timeout: cfg.WebhookTimeout, Retention: cfg.Retention[models.PurgeEvents], Allow: cfg.WebhookAllowCIDRs,
				BulkRunning: cfg.BulkRunning, BulkRate: cfg.BulkRate,
			}
			if diff := cmp.Diff(g, c.want, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("%s=%q (-got +want):\n%s", c.key, c.value, diff)
			}
		})
	}
}
