package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisTimeout bounds the client's own socket and pool waits: the start's
// check and /readyz's ping get up to this long, since a first connection
// (dial, HELLO, client info) on a busy machine may take more than 50 ms,
// and neither a start nor a readiness probe should fail on that. The rate
// limiter bounds each of its calls far tighter, by its context
// (ratelimit.DefaultRedisTimeout, 50 ms): it fails open, so an outage
// costs a request at most that instead of go-redis's 5 s timeouts and
// retries.
const redisTimeout = 2 * time.Second

// newRedisClient returns a client of the Redis at rawURL (REDIS_URL) after
// checking that it answers.
func newRedisClient(ctx context.Context, rawURL string) (*redis.Client, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	setRedisTimeouts(opts, redisTimeout)
	c := redis.NewClient(opts)
	pingCtx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	if err := c.Ping(pingCtx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect redis at %s: %w", opts.Addr, err)
	}
	return c, nil
}

// setRedisTimeouts gives opts timeouts of d where REDIS_URL set none (ParseURL
// leaves an absent parameter zero and turns an explicit 0 into -1). An
// explicit ?dial_timeout= or ?read_timeout= holds for the client, but each
// limiter call stays bounded by its context (ratelimit.Redis.Timeout). Retries and dial
// retries are off: they are what made an outage cost 1.7 s.
func setRedisTimeouts(opts *redis.Options, d time.Duration) {
	for _, v := range []*time.Duration{&opts.DialTimeout, &opts.ReadTimeout, &opts.WriteTimeout, &opts.PoolTimeout} {
		if *v == 0 {
			*v = d
		}
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = -1
	}
	opts.DialerRetries = 1 // not settable in the URL
	// Without it go-redis ignores the caller's deadline on the socket.
	opts.ContextTimeoutEnabled = true
}

// redisLogger hands go-redis's own messages to the service's JSON log,
// which would otherwise get the library's plain-text lines on stderr.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.Log(ctx, slog.LevelWarn, "redis", "text", strings.TrimSpace(fmt.Sprintf(format, v...)))
}
