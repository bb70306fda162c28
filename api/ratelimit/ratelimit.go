// Package ratelimit holds the per-minute limiters behind the API: GCRA in
// process for a single replica, and GCRA in Redis (redis_rate) so that
// replicas share one budget.
package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Result is the outcome of one request against a limit.
type Result struct {
	Allowed bool
	// Limit is the number of requests per minute, which is also the burst.
	Limit int
	// Remaining is how many more requests would pass right now.
	Remaining int
	// RetryAfter is how long until the next request passes; zero when this
	// one passed.
	RetryAfter time.Duration
	// ResetAfter is how long until the full budget is back.
	ResetAfter time.Duration
}

// Memory is a GCRA limiter kept in this process, with the same arithmetic
// as redis_rate: a budget of perMinute requests that refills evenly over a
// minute, so exactly perMinute requests pass in a burst.
type Memory struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [64]memoryShard
}

type memoryShard struct {
	mu        sync.Mutex
	tat       map[string]time.Time // theoretical arrival time per key
	lastSweep time.Time
}

// NewMemory returns an in-process limiter; now is time.Now when nil.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{now: now, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].tat = map[string]time.Time{}
	}
	return m
}

// Allow takes one request from key's budget of perMinute requests a minute.
func (m *Memory) Allow(ctx context.Context, key string, perMinute int) (Result, error) {
	return m.AllowN(ctx, key, perMinute, 1)
}

// AllowN takes n requests at once from key's budget of perMinute requests
// a minute, or none: a refused call spends nothing, so that a caller that
// needs n (a batch of n operations) is not left with part of them taken.
// n above perMinute is never allowed.
func (m *Memory) AllowN(_ context.Context, key string, perMinute, n int) (Result, error) {
	if perMinute < 1 {
		return Result{}, fmt.Errorf("limit must be at least 1, got %d", perMinute)
	}
	if n < 1 {
		return Result{}, fmt.Errorf("requests taken must be at least 1, got %d", n)
	}
	now := m.now()
	sh := &m.shards[maphash.String(m.seed, key)%uint64(len(m.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.sweep(now)

	interval := time.Minute / time.Duration(perMinute)
	burstOffset := interval * time.Duration(perMinute)
	tat := sh.tat[key]
	if tat.Before(now) {
		tat = now
	}
	newTAT := tat.Add(interval * time.Duration(n))
	diff := now.Sub(newTAT.Add(-burstOffset))
	// Test the sign of diff itself: integer division truncates toward zero,
	// so a diff just below zero would give 0 remaining and let one request
	// too many through in every burst.
	if diff < 0 {
		return Result{
			Limit: perMinute, RetryAfter: -diff, ResetAfter: tat.Sub(now),
		}, nil
	}
	remaining := int(diff / interval)
	sh.tat[key] = newTAT
	return Result{Allowed: true, Limit: perMinute, Remaining: remaining, ResetAfter: newTAT.Sub(now)}, nil
}

// sweep drops keys whose budget is full again, at most once a minute.
func (s *memoryShard) sweep(now time.Time) {
	if now.Sub(s.lastSweep) < time.Minute {
		return
	}
	s.lastSweep = now
	for k, tat := range s.tat {
		if tat.Before(now) {
			delete(s.tat, k)
		}
	}
}

// DefaultRedisTimeout is how long one Allow waits for Redis unless
// Redis.Timeout says otherwise. The caller lets a request through when the
// limiter fails, so this is what a Redis outage costs each request.
const DefaultRedisTimeout = 50 * time.Millisecond

// Redis is a GCRA limiter in Redis, shared by every replica.
type Redis struct {
	// Timeout bounds each Allow call, every round trip to Redis in it
	// included; zero or less means DefaultRedisTimeout. The bound reaches
	// the socket only when the client has ContextTimeoutEnabled (otherwise
	// go-redis waits out its own dial and read timeouts), so give the client
	// that and timeouts no longer than this one. Set it before the first
	// Allow.
	Timeout time.Duration

	l      *redis_rate.Limiter
	prefix string
}

// NewRedis returns a limiter on the given client; keys are stored under
// prefix.
func NewRedis(client *redis.Client, prefix string) *Redis {
	return &Redis{l: redis_rate.NewLimiter(client), prefix: prefix}
}

// Allow takes one request from key's budget of perMinute requests a minute.
func (r *Redis) Allow(ctx context.Context, key string, perMinute int) (Result, error) {
	return r.AllowN(ctx, key, perMinute, 1)
}

// AllowN takes n requests at once from key's budget, or none, as
// Memory.AllowN does.
func (r *Redis) AllowN(ctx context.Context, key string, perMinute, n int) (Result, error) {
	if perMinute < 1 {
		return Result{}, fmt.Errorf("limit must be at least 1, got %d", perMinute)
	}
	if n < 1 {
		return Result{}, fmt.Errorf("requests taken must be at least 1, got %d", n)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultRedisTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := r.l.AllowN(ctx, r.prefix+key, redis_rate.PerMinute(perMinute), n)
	if err != nil {
		return Result{}, fmt.Errorf("redis rate limit: %w", err)
	}
	return Result{
		Allowed: res.Allowed > 0, Limit: perMinute, Remaining: res.Remaining,
		RetryAfter: max(res.RetryAfter, 0), ResetAfter: max(res.ResetAfter, 0),
	}, nil
}
