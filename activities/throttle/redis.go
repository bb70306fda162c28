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
	node string
}

// DefaultRedisTimeout bounds a call to Redis.
const DefaultRedisTimeout = 2 * time.Second

// NewRedis returns a throttle on client, its keys under prefix.
func NewRedis(client *redis.Client, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix, node: strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// The keys of an endpoint: the window's log (permit id → send time,
// microseconds), the rate queue's next free place, the slots in flight
// (permit id → lease's end), the in-flight queue (waiter → first ask) with
// its waiters' ends, and the mean hold.
func (r *Redis) keys(key string) []string {
	p := r.prefix + "{" + key + "}:"
	return []string{p + "log", p + "tat", p + "inflight", p + "waiters", p + "waiters_end", p + "hold"}
}

// acquireScript: ARGV per second, window µs, max in flight, lease µs,
// permit id, queued (1/0), waiter, waiter ttl µs, default hold µs.
// Answers {1, now} on a grant, {0, wait µs} on a refusal.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local L, W, M, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local id, queued, waiter, wttl, dhold = ARGV[5], ARGV[6] == '1', ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
local ttl = math.floor((W + lease + wttl) / 1000) + 60000
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
    return {0, hold * (math.floor(rank / M) + 1)}
  end
end
if L > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - W)
  local tat = tonumber(redis.call('GET', KEYS[2]) or '0')
  local T = math.floor(W / L)
  local n = redis.call('ZCARD', KEYS[1])
  local free = now
  if n >= L then
    local o = redis.call('ZRANGE', KEYS[1], n - L, n - L, 'WITHSCORES')
    free = tonumber(o[2]) + W
  end
  local pass = false
  if queued or tat <= now + W - T then
    if n < L then
      pass = true
      if not queued then
        redis.call('SET', KEYS[2], math.max(tat, now) + T, 'PX', ttl)
      end
    elseif queued then
      return {0, free - now}
    end
  end
  if not pass then
    local at = math.max(tat, now, free)
    redis.call('SET', KEYS[2], at + T, 'PX', ttl)
    return {0, at - now}
  end
  redis.call('ZADD', KEYS[1], now, id)
  redis.call('PEXPIRE', KEYS[1], ttl)
end
if M > 0 then
  redis.call('ZADD', KEYS[3], now + lease, id)
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('ZREM', KEYS[4], waiter)
  redis.call('ZREM', KEYS[5], waiter)
end
return {1, now}
`)

// sendingScript stamps a permit's entry in the log with Redis's time,
// if it is still there.
var sendingScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZADD', KEYS[1], 'XX', now, ARGV[1])
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
		return Grant{Permit: &Permit{}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	keys := r.keys(q.Key)
	id := r.node + "." + strconv.FormatUint(r.seq.Add(1), 36)
	queued := "0"
	if q.Queued {
		queued = "1"
	}
	res, err := acquireScript.Run(ctx, r.client, keys,
		q.Limits.PerSecond, window.Microseconds(), q.Limits.MaxInFlight, q.Lease.Microseconds(),
		id, queued, q.Waiter, waiterTTL.Microseconds(), defaultHold.Microseconds()).Int64Slice()
	if err != nil {
		return Grant{}, fmt.Errorf("redis throttle: %w", err)
	}
	if len(res) != 2 {
		return Grant{}, fmt.Errorf("redis throttle: unexpected answer %v", res)
	}
	if res[0] == 0 {
		return Grant{Wait: max(time.Duration(res[1])*time.Microsecond, minWait)}, nil
	}
	granted := res[1]
	p := &Permit{}
	if q.Limits.PerSecond > 0 {
		p.sending = func() error {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout())
			defer cancel()
			if err := sendingScript.Run(ctx, r.client, keys[:1], id).Err(); err != nil {
				return fmt.Errorf("redis throttle: %w", err)
			}
			return nil
		}
	}
	if q.Limits.MaxInFlight > 0 {
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
