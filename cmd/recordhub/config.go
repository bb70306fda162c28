package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/api"
	"github.com/recordhub/recordhub/api/changefeed"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/workflows"
)

// Config is the service's configuration, read from the environment.
type Config struct {
	// Role is what serve runs: all (API, worker, dispatcher), api or worker.
	Role              string
	HTTPAddr          string
	DatabaseURL       string
	DatabaseMaxConns  int
	RedisURL          string
	DataDir           string
	SecretKey         string
	BootstrapAdminKey string
	DefaultRateLimit  int
	// MaxEndpointsPerTenant bounds each tenant's webhook endpoints.
	MaxEndpointsPerTenant int
	// ChangeStreamsPerKey and ChangeStreamsPerTenant bound the change
	// feed's live streams open at once in this process.
	ChangeStreamsPerKey    int
	ChangeStreamsPerTenant int
	AutoMigrate            bool
	LogLevel               slog.Level
	// PublicURL is the base of the inbound webhook URLs shown to admins.
	PublicURL string

	TemporalAddress   string
	TemporalNamespace string
	TemporalTaskQueue string
	TemporalUIAddr    string
	// TemporalUIWrite lets the embedded Web UI change workflows
	// (RECORDHUB_TEMPORAL_UI_WRITE); off by default, as the UI has no login.
	TemporalUIWrite   bool
	TemporalPort      int
	TemporalRetention time.Duration
	// TemporalUIURL is the Temporal Web UI the console links deliveries to
	// (RECORDHUB_TEMPORAL_UI_URL); by default the embedded UI's address
	// when it runs, none otherwise.
	TemporalUIURL string

	WebhookTimeout          time.Duration
	WebhookRetryInitial     time.Duration
	WebhookRetryMaxInterval time.Duration
	// WebhookAllowCIDRs are the networks exempted from the private-address
	// block (RECORDHUB_WEBHOOK_ALLOW_CIDRS), parsed once here for both the
	// API's URL check and the deliverer.
	WebhookAllowCIDRs []netip.Prefix
	// EndpointDisableAfter: an endpoint whose deliveries have all failed
	// for this long (at least 5 of them) is disabled
	// (RECORDHUB_ENDPOINT_DISABLE_AFTER); zero never disables.
	EndpointDisableAfter time.Duration

	// Retention is how long each kind of row is kept
	// (RECORDHUB_RETENTION and its per-kind overrides); zero keeps for ever.
	// Idempotency keys are kept for IdempotencyTTL.
	Retention map[models.PurgeKind]time.Duration
	// IdempotencyTTL is how long the answer of a write sent with an
	// Idempotency-Key answers its retries (RECORDHUB_IDEMPOTENCY_TTL).
	IdempotencyTTL time.Duration

	// Tracing is read from the standard OTEL_* variables; off unless an
	// OTLP endpoint is set.
	Tracing TracingConfig

	// PprofAddr is where the Go profiler is served (RECORDHUB_PPROF_ADDR);
	// empty, the default: nowhere.
	PprofAddr string

	// BulkRunning is how many resyncs and recoveries of one tenant run at
	// once, together (RECORDHUB_BULK_RUNNING_PER_TENANT); zero:
	// models.DefaultBulkRunning.
	BulkRunning int
	// BulkRate is how many deliveries a second a tenant's resyncs and
	// recoveries start, together, over every worker
	// (RECORDHUB_BULK_RATE_PER_TENANT, where 0 turns the pace off);
	// zero: models.DefaultBulkRate, negative: no pace.
	BulkRate int
}

// configFromEnv reads the configuration through lookupEnv (os.LookupEnv),
// applying defaults.
func configFromEnv(lookupEnv func(string) (string, bool)) (Config, error) {
	getenv := func(name string) string {
		v, _ := lookupEnv(name)
		return v
	}
	c := Config{
		Role:              "all",
		HTTPAddr:          envOr(getenv, "RECORDHUB_HTTP_ADDR", "127.0.0.1:8080"),
		PublicURL:         getenv("RECORDHUB_PUBLIC_URL"),
		DatabaseURL:       getenv("DATABASE_URL"),
		RedisURL:          getenv("REDIS_URL"),
		DataDir:           envOr(getenv, "RECORDHUB_DATA_DIR", "./data"),
		SecretKey:         getenv("RECORDHUB_SECRET_KEY"),
		BootstrapAdminKey: getenv("RECORDHUB_BOOTSTRAP_ADMIN_KEY"),
		TemporalAddress:   getenv("TEMPORAL_ADDRESS"),
		TemporalNamespace: envOr(getenv, "TEMPORAL_NAMESPACE", "default"),
		TemporalTaskQueue: envOr(getenv, "RECORDHUB_TEMPORAL_TASK_QUEUE", workflows.DefaultTaskQueue),
		TemporalUIAddr:    envOr(getenv, "RECORDHUB_TEMPORAL_UI_ADDR", "127.0.0.1:8233"),
		PprofAddr:         getenv("RECORDHUB_PPROF_ADDR"),
	}
	if v, ok := lookupEnv("RECORDHUB_TEMPORAL_UI_ADDR"); ok {
		c.TemporalUIAddr = v // an explicit empty string turns the UI off
	}
	var errs []string
	uiURL, err := temporalUIURL(getenv("RECORDHUB_TEMPORAL_UI_URL"), c.TemporalAddress, c.TemporalUIAddr)
	if err != nil {
		errs = append(errs, err.Error())
	}
	c.TemporalUIURL = uiURL
	intVar := func(dst *int, name string, def, lo, hi int) {
		*dst = def
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				errs = append(errs, fmt.Sprintf("%s must be an integer from %d to %d", name, lo, hi))
				return
			}
			*dst = n
		}
	}
	durVar := func(dst *time.Duration, name string, def time.Duration) {
		var ok bool
		if *dst, ok = envDuration(getenv, name, def, false); !ok {
			errs = append(errs, fmt.Sprintf("%s must be a positive duration such as 30s", name))
		}
	}
	intVar(&c.DefaultRateLimit, "RECORDHUB_DEFAULT_RATE_LIMIT", models.DefaultRateLimitPerMinute, 1, models.MaxRateLimitPerMinute)
	intVar(&c.DatabaseMaxConns, "RECORDHUB_DATABASE_MAX_CONNS", 20, 2, 10_000)
	intVar(&c.MaxEndpointsPerTenant, "RECORDHUB_MAX_ENDPOINTS_PER_TENANT", models.DefaultMaxEndpointsPerTenant, 1, 100_000)
	intVar(&c.ChangeStreamsPerKey, "RECORDHUB_CHANGES_STREAMS_PER_KEY", changefeed.DefaultPerKey, 1, 1_000_000)
	intVar(&c.ChangeStreamsPerTenant, "RECORDHUB_CHANGES_STREAMS_PER_TENANT", changefeed.DefaultPerTenant, 1, 1_000_000)
	intVar(&c.TemporalPort, "RECORDHUB_TEMPORAL_PORT", 7233, 1, 65535)
	intVar(&c.BulkRunning, models.BulkRunningSetting, models.DefaultBulkRunning, 1, 10_000)
	intVar(&c.BulkRate, "RECORDHUB_BULK_RATE_PER_TENANT", models.DefaultBulkRate, 0, 100_000)
	if c.BulkRate == 0 {
		c.BulkRate = -1
	}
	durVar(&c.TemporalRetention, "RECORDHUB_TEMPORAL_RETENTION", 720*time.Hour)
	retry := activities.DefaultSchedule()
	durVar(&c.WebhookTimeout, "RECORDHUB_WEBHOOK_TIMEOUT", retry.AttemptTimeout)
	durVar(&c.WebhookRetryInitial, "RECORDHUB_WEBHOOK_RETRY_INITIAL", retry.Initial)
	durVar(&c.WebhookRetryMaxInterval, "RECORDHUB_WEBHOOK_RETRY_MAX_INTERVAL", retry.MaxInterval)
	durVar(&c.IdempotencyTTL, "RECORDHUB_IDEMPOTENCY_TTL", api.DefaultIdempotencyTTL)
	errs = append(errs, c.readRetention(getenv)...)
	var terr string
	c.Tracing, terr = tracingFromEnv(getenv)
	if terr != "" {
		errs = append(errs, terr)
	}
	var ok bool
	if c.EndpointDisableAfter, ok = envDuration(getenv, "RECORDHUB_ENDPOINT_DISABLE_AFTER", activities.DefaultDisableAfter, true); !ok {
		errs = append(errs, "RECORDHUB_ENDPOINT_DISABLE_AFTER must be a duration such as 120h, or 0 never to disable")
	}
	if c.AutoMigrate, ok = envBool(getenv, "RECORDHUB_AUTO_MIGRATE", true, true); !ok {
		errs = append(errs, "RECORDHUB_AUTO_MIGRATE must be true or false")
	}
	if c.TemporalUIWrite, ok = envBool(getenv, "RECORDHUB_TEMPORAL_UI_WRITE", false, false); !ok {
		errs = append(errs, "RECORDHUB_TEMPORAL_UI_WRITE must be true, false, 1 or 0")
	}
	if v := getenv("RECORDHUB_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, "RECORDHUB_LOG_LEVEL must be debug, info, warn or error")
		}
	}
	if c.WebhookAllowCIDRs, err = activities.ParseAllowCIDRs(getenv("RECORDHUB_WEBHOOK_ALLOW_CIDRS")); err != nil {
		errs = append(errs, fmt.Sprintf("RECORDHUB_WEBHOOK_ALLOW_CIDRS: %v", err))
	}
	if n := len(c.BootstrapAdminKey); n > 0 && n < MinBootstrapKeyLen {
		errs = append(errs, fmt.Sprintf("RECORDHUB_BOOTSTRAP_ADMIN_KEY must be at least %d characters (it is an admin key: use a random one, such as rh_ followed by openssl rand -hex 24)", MinBootstrapKeyLen))
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		errs = append(errs, "DATABASE_URL must be a postgres:// URL (leave it empty for the embedded SQLite file)")
	}
	if q := c.TemporalTaskQueue; !utf8.ValidString(q) || len(q) > 200 || strings.TrimSpace(q) != q {
		errs = append(errs, "RECORDHUB_TEMPORAL_TASK_QUEUE must be a task queue name of at most 200 bytes, without surrounding spaces")
	}
	if c.PprofAddr != "" {
		if err := checkPprofAddr(c.PprofAddr); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, "RECORDHUB_PUBLIC_URL must be an http or https base URL such as https://records.example.com")
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

// DefaultRetention is RECORDHUB_RETENTION's default.
const DefaultRetention = 720 * time.Hour

// retentionVars are the per-kind overrides of RECORDHUB_RETENTION.
var retentionVars = map[models.PurgeKind]string{
	models.PurgeAccessLogs:    "RECORDHUB_RETENTION_ACCESS_LOGS",
	models.PurgeDeliveries:    "RECORDHUB_RETENTION_DELIVERIES",
	models.PurgeEvents:        "RECORDHUB_RETENTION_EVENTS",
	models.PurgeInboundEvents: "RECORDHUB_RETENTION_INBOUND_EVENTS",
}

// readRetention fills c.Retention: each kind's override, else
// RECORDHUB_RETENTION, else DefaultRetention. It returns the errors of
// values that are not durations of zero or more.
func (c *Config) readRetention(getenv func(string) string) []string {
	var errs []string
	parse := func(name string, def time.Duration) time.Duration {
		d, ok := envDuration(getenv, name, def, true)
		if !ok {
			errs = append(errs, fmt.Sprintf("%s must be a duration such as 720h, or 0 to keep for ever", name))
		}
		return d
	}
	all := parse("RECORDHUB_RETENTION", DefaultRetention)
	c.Retention = map[models.PurgeKind]time.Duration{}
	for _, kind := range models.PurgeKinds {
		if _, ok := retentionVars[kind]; ok {
			c.Retention[kind] = parse(retentionVars[kind], all)
		}
	}
	// An answer stored under an idempotency key is of no use past its TTL.
	c.Retention[models.PurgeIdempotencyKeys] = c.IdempotencyTTL
	return errs
}

// purges reports whether any kind of row has a retention.
func (c Config) purges() bool {
	for _, d := range c.Retention {
		if d > 0 {
			return true
		}
	}
	return false
}

// MinBootstrapKeyLen is the shortest RECORDHUB_BOOTSTRAP_ADMIN_KEY accepted:
// as long as the keys recordhub generates.
const MinBootstrapKeyLen = 32

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// envDuration reads variable name as a duration: def when it is unset or
// empty, zero only when zeroOK, never negative. A refused value gives def
// and false; the caller names the variable and what it accepts.
func envDuration(getenv func(string) string, name string, def time.Duration, zeroOK bool) (time.Duration, bool) {
	v := getenv(name)
	if v == "" {
		return def, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d == 0 && !zeroOK) {
		return def, false
	}
	return d, true
}

// envBool reads variable name as a boolean: def when it is unset or empty,
// true or 1, false or 0, and, when words, also yes or no, in any case. A
// refused value gives def and false, as envDuration.
func envBool(getenv func(string) string, name string, def, words bool) (bool, bool) {
	v := getenv(name)
	if words {
		v = strings.ToLower(v)
	}
	switch v {
	case "":
		return def, true
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	case "yes", "no":
		if words {
			return v == "yes", true
		}
	}
	return def, false
}

// Roles of serve.
const (
	RoleAll    = "all"
	RoleAPI    = "api"
	RoleWorker = "worker"
)

func (c Config) validateRole() error {
	switch c.Role {
	case RoleAll:
		return nil
	case RoleAPI, RoleWorker:
		if c.TemporalAddress == "" {
			return fmt.Errorf("--role %s needs TEMPORAL_ADDRESS: the embedded Temporal server runs only with --role all", c.Role)
		}
		return nil
	}
	return fmt.Errorf("--role must be all, api or worker, not %q", c.Role)
}

func (c Config) runsAPI() bool    { return c.Role == RoleAll || c.Role == RoleAPI }
func (c Config) runsWorker() bool { return c.Role == RoleAll || c.Role == RoleWorker }

// temporalUIURL is the console's Temporal Web UI base: explicit, an
// absolute http(s) URL without query or fragment; or the embedded UI's
// address, when the embedded server runs with its UI (a wildcard host is
// shown as localhost); or none.
func temporalUIURL(explicit, temporalAddress, uiAddr string) (string, error) {
	if explicit != "" {
		u, err := url.Parse(explicit)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return "", errors.New("RECORDHUB_TEMPORAL_UI_URL must be an http or https URL such as https://temporal.example.com, without query or fragment")
		}
		return strings.TrimRight(u.String(), "/"), nil
	}
	if temporalAddress != "" || uiAddr == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(uiAddr)
	if err != nil {
		return "", nil // the embedded UI refuses it at start, with its own error
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
