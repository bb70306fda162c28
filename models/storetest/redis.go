package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis returns a client of the test Redis, closed when the test ends; the
// test is skipped (or fails, when Required) if Redis cannot be reached, and
// skipped by -short.
// Tests keep their keys apart with a random prefix of their own.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Redis; skipped by -short")
	}
	opts, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("parse redis url: %v", err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		if Required() {
			t.Fatalf("Redis is required but unreachable at %s: %v", RedisURL(), err)
		}
		t.Skipf("Redis unreachable at %s (%v); set RECORDHUB_TEST_REDIS_URL or start it", RedisURL(), err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
