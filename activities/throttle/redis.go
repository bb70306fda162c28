package throttle

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis holds throttles across every process that shares its Redis. Each
// decision is one Lua script, atomic in Redis, on Redis's clock (TIME), so
// that processes on machines whose clocks differ count the same window.
// An endpoint's keys share a hash tag, for Redis Cluster. When Redis fails
// Acquire fails: the caller retries later, and never sends unthrottled.
type Redis struct {
	client *redis.Client
	prefix string
	// Timeout bounds each call; DefaultRedisTimeout when zero.
	Timeout time.Duration
	seq     atomic.Uint64
	// node tells this process's permit ids from other processes'.
	node    string
	wakeups wakeups
}

// DefaultRedisTimeout bounds a call to Redis.
const DefaultRedisTimeout = 2 * time.Second

// NewRedis returns a throttle on client, its keys under prefix.
func NewRedis(client *redis.Client, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix, node: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// The keys of an endpoint: the rate's next free slot (µs), the refused
// waiters' places (waiter → place, µs), the slots in flight (permit id →
// lease's end), the in-flight queue (waiter → first ask) with its waiters'
// ends, the mean hold, the place after the last waiter placed again, and
// the log of sends. See Memory.Acquire.
func (r *Redis) keys(key string) []string {
	p := r.prefix + "{" + key + "}:"
	return []string{p + "next", p + "places", p + "inflight", p + "waiters", p + "waiters_end", p + "hold", p + "tail", p + "log"}
}

// acquireScript: ARGV per second, slot interval µs, max in flight, lease
// µs, permit id, waiter, waiter ttl µs, default hold µs, within µs, place
// grace µs. Answers {1, µs until the slot, now} on a grant, {0, wait µs, 1
// when the wait is for the rate} on a refusal. See Memory.Acquire.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local L, T, M, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local id, waiter, wttl, dhold = ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local within, grace = tonumber(ARGV[9]), tonumber(ARGV[10])
local ttl = math.floor((lease + wttl) / 1000) + 60000
if M > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now)
  if #gone > 0 then
    redis.call('ZREM', KEYS[4], unpack(gone))
    redis.call('ZREM', KEYS[5], unpack(gone))
  end
  if redis.call('ZCARD', KEYS[3]) >= M then
    redis.call('ZADD', KEYS[4], 'NX', now, waiter)
    redis.call('ZADD', KEYS[5], now + wttl, waiter)
    redis.call('PEXPIRE', KEYS[4], ttl)
    redis.call('PEXPIRE', KEYS[5], ttl)
    local rank = redis.call('ZRANK', KEYS[4], waiter)
    local hold = tonumber(redis.call('GET', KEYS[6]) or dhold)
    return {0, hold * (math.floor(rank / M) + 1), 0}
  end
end
local delay = 0
if L > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - grace))
  local at = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), now)
  local place = tonumber(redis.call('ZSCORE', KEYS[2], waiter))
  if not place then
    place = at + redis.call('ZCARD', KEYS[2]) * T
  end
  if place - now <= within and at - now > within then
    redis.call('ZREM', KEYS[2], waiter)
    local due = redis.call('ZCOUNT', KEYS[2], '-inf', at)
    place = math.max(tonumber(redis.call('GET', KEYS[7]) or '0'), at + due * T)
    redis.call('SET', KEYS[7], place + T, 'PX', math.floor((place - now) / 1000) + 60000)
  end
  if place - now > within then
    redis.call('ZADD', KEYS[2], place, waiter)
    local ms = math.floor((place - now + grace) / 1000) + 60000
    if redis.call('PTTL', KEYS[2]) < ms then
      redis.call('PEXPIRE', KEYS[2], ms)
    end
    return {0, place - now, 1}
  end
  redis.call('ZREM', KEYS[2], waiter)
  redis.call('SET', KEYS[1], at + T, 'PX', math.floor((at - now) / 1000) + 60000)
  delay = at - now
end
if M > 0 then
  redis.call('ZADD', KEYS[3], now + lease, id)
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('ZREM', KEYS[4], waiter)
  redis.call('ZREM', KEYS[5], waiter)
end
return {1, delay, now}
`)

// sendingScript counts a send in the endpoint's log (permit id → time,
// µs), or answers how long to wait first (see Permit.Wait): ARGV per
// second, log window µs, permit id. Answers µs to wait, 0 when counted.
var sendingScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local L, W = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - W)
local n = redis.call('ZCARD', KEYS[1])
if n >= L then
  local o = redis.call('ZRANGE', KEYS[1], n - L, n - L, 'WITHSCORES')
  local wait = tonumber(o[2]) + W - now
  if wait > 0 then
    return wait
  end
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.floor(W / 1000) + 60000)
return 0
`)

// wroteScript moves a send's count in the log to now, if it is still
// there: ARGV permit id.
var wroteScript = redis.NewScript(`
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], 'XX', tonumber(t[1]) * 1000000 + tonumber(t[2]), ARGV[1])
return 0
`)

// releaseScript gives a slot in flight back and folds its hold into the
// mean: ARGV permit id, its grant's time µs.
var releaseScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  local held = now - tonumber(ARGV[2])
  local hold = tonumber(redis.call('GET', KEYS[2]) or held)
  redis.call('SET', KEYS[2], math.floor((hold * 4 + held) / 5), 'PX', 3600000)
end
return 0
`)

func (r *Redis) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultRedisTimeout
}

// Acquire asks for a slot of q.Key.
func (r *Redis) Acquire(ctx context.Context, q Request) (Grant, error) {
	if err := q.Limits.check(); err != nil {
		return Grant{}, err
	}
	if q.Limits == (Limits{}) {
		return Grant{Permit: &Permit{At: time.Now()}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	keys := r.keys(q.Key)
	id := r.node + "." + strconv.FormatUint(r.seq.Add(1), 36)
	var interval time.Duration
	if q.Limits.PerSecond > 0 {
		interval = q.Limits.interval(r.wakeups.guard(time.Now()))
	}
	// The instant on this clock is taken from the time of the ask: a
	// little early, never late by the time this process takes to read the
	// answer (on a busy machine, tens of milliseconds); the log of sends
	// holds back a send that early would break the count.
	asked := time.Now()
	res, err := acquireScript.Run(ctx, r.client, keys,
		q.Limits.PerSecond, interval.Microseconds(), q.Limits.MaxInFlight, q.Lease.Microseconds(),
		id, q.Waiter, waiterTTL.Microseconds(), defaultHold.Microseconds(),
		q.Within.Microseconds(), placeGrace.Microseconds()).Int64Slice()
	if err != nil {
		return Grant{}, fmt.Errorf("redis throttle: %w", err)
	}
	if len(res) != 3 {
		return Grant{}, fmt.Errorf("redis throttle: unexpected answer %v", res)
	}
	if res[0] == 0 {
		return Grant{Wait: max(time.Duration(res[1])*time.Microsecond, minWait), Reserved: res[2] == 1}, nil
	}
	p := &Permit{At: asked.Add(time.Duration(res[1]) * time.Microsecond)}
	if q.Limits.PerSecond > 0 {
		p.wakeups = &r.wakeups
		p.sending = func(ctx context.Context) (time.Duration, error) {
			ctx, cancel := context.WithTimeout(ctx, r.timeout())
			defer cancel()
			d, err := sendingScript.Run(ctx, r.client, keys[7:8], q.Limits.PerSecond, logWindow.Microseconds(), id).Int64()
			if err != nil {
				return 0, fmt.Errorf("redis throttle: %w", err)
			}
			return time.Duration(d) * time.Microsecond, nil
		}
		p.wrote = func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout())
			defer cancel()
			wroteScript.Run(ctx, r.client, keys[7:8], id)
		}
	}
	if q.Limits.MaxInFlight > 0 {
		granted := res[2]
		p.release = func() {
			// Best effort: a slot not given back comes back when its lease
			// ends.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout())
			defer cancel()
			releaseScript.Run(ctx, r.client, []string{keys[2], keys[5]}, id, granted)
		}
	}
	return Grant{Permit: p}, nil
}
