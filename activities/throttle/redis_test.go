package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recordhub/recordhub/activities/throttle"
	"github.com/recordhub/recordhub/models/storetest"
)

func redisThrottle(t *testing.T) *throttle.Redis {
	return throttle.NewRedis(storetest.Redis(t), "test:throttle:")
}

// twoProcesses is two Redis throttles on one Redis, as on two workers,
// used in turn.
type twoProcesses struct {
	a, b *throttle.Redis
	n    int
}

func (p *twoProcesses) Acquire(ctx context.Context, r throttle.Request) (throttle.Grant, error) {
	p.n++ // racy by design: which one answers does not matter
	if p.n%2 == 0 {
		return p.a.Acquire(ctx, r)
	}
	return p.b.Acquire(ctx, r)
}

func TestRedisRate(t *testing.T) {
	checkRate(t, &twoProcesses{a: redisThrottle(t), b: redisThrottle(t)})
}
func TestRedisInFlight(t *testing.T) {
	checkInFlight(t, &twoProcesses{a: redisThrottle(t), b: redisThrottle(t)})
}
func TestRedisWaitsSpread(t *testing.T) { checkWaitsSpread(t, redisThrottle(t)) }
func TestRedisLease(t *testing.T)       { checkLease(t, redisThrottle(t)) }
func TestRedisLate(t *testing.T) {
	checkLate(t, &twoProcesses{a: redisThrottle(t), b: redisThrottle(t)})
}

// TestRedisDown: with Redis unreachable, Acquire fails: the attempt is
// retried later and never sent unthrottled.
func TestRedisDown(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	th := throttle.NewRedis(c, "test:throttle:")
	th.Timeout = 200 * time.Millisecond
	g, err := th.Acquire(t.Context(), throttle.Request{Key: newKey(), Limits: throttle.Limits{PerSecond: 5}, Lease: time.Minute})
	if err == nil {
		t.Fatalf("Acquire with Redis down = %+v, want an error", g)
	}
}

func TestRedisSendLog(t *testing.T) {
	checkSendLog(t, &twoProcesses{a: redisThrottle(t), b: redisThrottle(t)}, false)
}
func TestRedisSendLogWrote(t *testing.T) {
	checkSendLog(t, &twoProcesses{a: redisThrottle(t), b: redisThrottle(t)}, true)
}
