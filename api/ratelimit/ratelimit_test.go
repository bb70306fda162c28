package ratelimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/recordhub/recordhub/api/ratelimit"
	"github.com/recordhub/recordhub/models/storetest"
)

// limiter is what both implementations offer.
type limiter interface {
	Allow(ctx context.Context, key string, perMinute int) (ratelimit.Result, error)
	AllowN(ctx context.Context, key string, perMinute, n int) (ratelimit.Result, error)
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// burst calls l n times and returns which calls passed and the remaining
// budget each passing call reported; between calls it runs between.
func burst(t *testing.T, l limiter, key string, perMinute, n int, between func()) (allowed []bool, remaining []int, last ratelimit.Result) {
	t.Helper()
	for i := range n {
		if i > 0 && between != nil {
			between()
		}
		res, err := l.Allow(context.Background(), key, perMinute)
		if err != nil {
			t.Fatalf("Allow #%d: %v", i+1, err)
		}
		if res.Limit != perMinute {
			t.Errorf("Allow #%d: limit %d, want %d", i+1, res.Limit, perMinute)
		}
		allowed = append(allowed, res.Allowed)
		if res.Allowed {
			remaining = append(remaining, res.Remaining)
		}
		last = res
	}
	return allowed, remaining, last
}

func TestMemoryBurst(t *testing.T) {
	tests := []struct {
		name string
		// step is how far the clock moves between calls: a burst is never
		// truly instantaneous, so a limiter must not round the first
		// moments of refill up to a whole request.
		step time.Duration
	}{
		{"frozen clock", 0},
		{"1ms between calls", time.Millisecond},
		{"just under one interval in all", (12*time.Second - time.Nanosecond) / 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
			m := ratelimit.NewMemory(clock.Now)
			allowed, remaining, last := burst(t, m, "k", 5, 6, func() { clock.Advance(tt.step) })
			if diff := cmp.Diff([]bool{true, true, true, true, true, false}, allowed); diff != "" {
				t.Errorf("allowed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]int{4, 3, 2, 1, 0}, remaining); diff != "" {
				t.Errorf("remaining (-want +got):\n%s", diff)
			}
			if last.RetryAfter <= 0 || last.RetryAfter > 12*time.Second {
				t.Errorf("retry after %v, want within (0, 12s]", last.RetryAfter)
			}
			if last.Remaining != 0 {
				t.Errorf("refused call reports %d remaining, want 0", last.Remaining)
			}
		})
	}
}

func TestMemoryRefill(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := ratelimit.NewMemory(clock.Now)
	ctx := context.Background()
	allow := func(key string) ratelimit.Result {
		t.Helper()
		res, err := m.Allow(ctx, key, 5)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for range 5 {
		allow("k")
	}
	refused := allow("k")
	if refused.Allowed {
		t.Fatalf("sixth call of a burst passed")
	}
	if got, want := refused.RetryAfter, 12*time.Second; got != want {
		t.Errorf("retry after %v, want %v", got, want)
	}
	if got := allow("other"); !got.Allowed {
		t.Errorf("another key's first call refused: %+v", got)
	}

	clock.Advance(12*time.Second - time.Millisecond)
	if got := allow("k"); got.Allowed {
		t.Errorf("call before 60/N seconds passed: %+v", got)
	}
	clock.Advance(time.Millisecond)
	if got := allow("k"); !got.Allowed {
		t.Errorf("call after 60/N seconds refused: %+v", got)
	}
	if got := allow("k"); got.Allowed {
		t.Errorf("second call after one interval passed: %+v", got)
	}

	// After a full minute the whole budget is back.
	clock.Advance(time.Minute)
	allowed, _, _ := burst(t, m, "k", 5, 6, nil)
	if diff := cmp.Diff([]bool{true, true, true, true, true, false}, allowed); diff != "" {
		t.Errorf("allowed after a minute (-want +got):\n%s", diff)
	}
}

func TestMemoryRejectsLimitBelowOne(t *testing.T) {
	m := ratelimit.NewMemory(nil)
	for _, n := range []int{0, -1} {
		if _, err := m.Allow(context.Background(), "k", n); err == nil {
			t.Errorf("Allow with limit %d: no error", n)
		}
	}
}

// redisPrefix returns a key prefix of the test's own.
func redisPrefix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "test:" + hex.EncodeToString(b) + ":"
}

func TestRedisBurst(t *testing.T) {
	l := redisLimiter(t, redisPrefix())
	allowed, remaining, last := burst(t, l, "k", 5, 7, nil)
	if diff := cmp.Diff([]bool{true, true, true, true, true, false, false}, allowed); diff != "" {
		t.Errorf("allowed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{4, 3, 2, 1, 0}, remaining); diff != "" {
		t.Errorf("remaining (-want +got):\n%s", diff)
	}
	if last.RetryAfter <= 0 || last.RetryAfter > 12*time.Second {
		t.Errorf("retry after %v, want within (0, 12s]", last.RetryAfter)
	}
}

// TestRedisSharedBudget checks that two limiters, as on two replicas with
// their own connections, spend one budget between them.
func TestRedisSharedBudget(t *testing.T) {
	prefix := redisPrefix()
	a := redisLimiter(t, prefix)
	b := redisLimiter(t, prefix)
	ctx := context.Background()
	passed := 0
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		res, err := l.Allow(ctx, "k", 5)
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			passed++
		}
	}
	if passed != 5 {
		t.Errorf("%d of 10 calls over two limiters passed, want 5", passed)
	}

	// A limiter under another prefix has a budget of its own.
	c := redisLimiter(t, redisPrefix())
	if res, err := c.Allow(ctx, "k", 5); err != nil || !res.Allowed {
		t.Errorf("first call under another prefix: %+v, %v; want allowed", res, err)
	}
}

// TestRedisUnansweredTimesOut points a limiter at a server that accepts
// connections and never answers, as a hung Redis would: Allow must give up
// by its own timeout, whatever the client's longer defaults, so that the
// API can let the request through. No clock is read: a hook sees that the
// command went out bounded by at most the limiter's timeout, and the
// server that the bound ended it without a retry (with go-redis's 5 s
// reads and 3 retries it would see four connections, 20 s later).
func TestRedisUnansweredTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})

	// The client keeps go-redis's defaults (5 s reads, 3 retries) but, as the
	// service's does, lets the context bound its socket waits.
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	bounds := &deadlineHook{}
	client.AddHook(bounds)
	l := ratelimit.NewRedis(client, redisPrefix())

	res, err := l.Allow(context.Background(), "k", 5)
	if err == nil {
		t.Fatalf("Allow against a silent server: %+v, want an error", res)
	}
	t.Logf("failed: %v", err)
	sent := bounds.get()
	if len(sent) == 0 || slices.Contains(sent, false) {
		t.Errorf("commands sent with a deadline at most %v away: %v, want at least one, all true", ratelimit.DefaultRedisTimeout, sent)
	}
	mu.Lock()
	conns := len(held)
	mu.Unlock()
	if conns != 1 {
		t.Errorf("the silent server saw %d connections, want 1 (no retry once the limiter's timeout passed)", conns)
	}
}

// deadlineHook notes, for each command, whether its context ends no later
// than ratelimit.DefaultRedisTimeout from when the command is sent. Time
// spent before that only brings the deadline nearer, so a slow machine
// cannot fail the check.
type deadlineHook struct {
	mu      sync.Mutex
	bounded []bool
}

func (h *deadlineHook) get() []bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bool(nil), h.bounded...)
}

func (h *deadlineHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *deadlineHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		deadline, ok := ctx.Deadline()
		h.mu.Lock()
		h.bounded = append(h.bounded, ok && time.Until(deadline) <= ratelimit.DefaultRedisTimeout)
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *deadlineHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// redisLimiter is a Redis limiter for tests that count budgets: each call
// may take a second, not the production 50 ms, past which the limiter fails
// open and a loaded machine would let a call through uncounted.
func redisLimiter(t *testing.T, prefix string) *ratelimit.Redis {
	l := ratelimit.NewRedis(storetest.Redis(t), prefix)
	l.Timeout = time.Second
	return l
}

// allowN checks AllowN on a budget of 10 a minute: n requests are taken
// at once or none, so a refused batch leaves the budget as it was, and
// more than the whole budget is never allowed.
func allowN(t *testing.T, l limiter) {
	t.Helper()
	ctx := context.Background()
	take := func(key string, n int) ratelimit.Result {
		t.Helper()
		res, err := l.AllowN(ctx, key, 10, n)
		if err != nil {
			t.Fatalf("AllowN(%d): %v", n, err)
		}
		return res
	}
	type step struct {
		n         int
		allowed   bool
		remaining int
	}
	var got, want []step
	for _, s := range []step{{5, true, 5}, {6, false, 0}, {5, true, 0}, {1, false, 0}} {
		res := take("k", s.n)
		got = append(got, step{s.n, res.Allowed, res.Remaining})
		want = append(want, s)
		if !res.Allowed && res.RetryAfter <= 0 {
			t.Errorf("AllowN(%d) refused with retry after %v, want more than 0", s.n, res.RetryAfter)
		}
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("AllowN steps (-want +got):\n%s", diff)
	}
	if res := take("big", 11); res.Allowed {
		t.Errorf("AllowN(11) of a budget of 10 allowed: %+v", res)
	}
	if res := take("big", 10); !res.Allowed || res.Remaining != 0 {
		t.Errorf("AllowN(10) after a refused AllowN(11) = %+v, want allowed with 0 remaining (the refusal spent nothing)", res)
	}
	if _, err := l.AllowN(ctx, "k", 10, 0); err == nil {
		t.Error("AllowN(0): no error")
	}
}

func TestMemoryAllowN(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	allowN(t, ratelimit.NewMemory(clock.Now))
}

func TestRedisAllowN(t *testing.T) {
	allowN(t, redisLimiter(t, redisPrefix()))
}
