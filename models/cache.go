package models

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
)

// changeChannel is the PostgreSQL NOTIFY channel on which changes to cached
// rows (keys, modules) are announced to every replica.
const changeChannel = "recordhub_changes"

// Cache lifetimes. Without a change feed (SQLite, or PostgreSQL while the
// listener is down) entries live shorter than the one second within which a
// revocation must reach every replica. With the feed, entries are dropped
// on every change and the long TTL only bounds staleness after surprises.
const (
	cacheShortTTL = 500 * time.Millisecond
	cacheLongTTL  = time.Minute
	cacheMaxSize  = 100_000
)

// cache holds lookups by string key, misses included (nil values): ids and
// key hashes are random, so a cached miss never hides a row created later.
type cache[V any] struct {
	now func() time.Time

	mu      sync.RWMutex
	entries map[string]cacheEntry[V]
	ttl     time.Duration
	// gen counts flushes: a lookup that raced with a flush must not put
	// what it read before the change back into the cache.
	gen uint64
}

type cacheEntry[V any] struct {
	v  V
	at time.Time
}

func newCache[V any](now func() time.Time) *cache[V] {
	return &cache[V]{now: now, entries: map[string]cacheEntry[V]{}, ttl: cacheShortTTL}
}

func (c *cache[V]) get(key string, load func() (V, error)) (V, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[key]
	ttl, gen := c.ttl, c.gen
	c.mu.RUnlock()
	if ok && now.Sub(e.at) < ttl {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if len(c.entries) >= cacheMaxSize {
			c.entries = map[string]cacheEntry[V]{}
		}
		c.entries[key] = cacheEntry[V]{v: v, at: now}
	}
	c.mu.Unlock()
	return v, nil
}

func (c *cache[V]) flush() {
	c.mu.Lock()
	c.gen++
	c.entries = map[string]cacheEntry[V]{}
	c.mu.Unlock()
}

// setFeed switches between the long TTL (a change feed is connected) and
// the short one, dropping every entry either way.
func (c *cache[V]) setFeed(connected bool) {
	c.mu.Lock()
	c.gen++
	c.entries = map[string]cacheEntry[V]{}
	c.ttl = cacheShortTTL
	if connected {
		c.ttl = cacheLongTTL
	}
	c.mu.Unlock()
}

// caches are the store's caches of rows that change rarely and are read on
// every request.
type caches struct {
	keys    *cache[*APIKey]
	modules *cache[*Module]
}

func (c caches) flush() {
	c.keys.flush()
	c.modules.flush()
}

func (c caches) setFeed(connected bool) {
	c.keys.setFeed(connected)
	c.modules.setFeed(connected)
}

// notifyChange tells other replicas, when tx commits, to drop their caches.
func (s *Store) notifyChange(tx *gorm.DB, what string) error {
	if s.dialect != Postgres {
		return nil
	}
	if err := tx.Exec("SELECT pg_notify(?, ?)", changeChannel, what).Error; err != nil {
		return fmt.Errorf("notify change: %w", err)
	}
	return nil
}

// WatchChanges listens for key and module changes made by other replicas
// until ctx ends, so that cached rows can live long. Without it (and always
// on SQLite) cached rows live half a second. It reconnects after failures.
func (s *Store) WatchChanges(ctx context.Context, log *slog.Logger) {
	if s.dialect != Postgres {
		return
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenChanges(ctx)
		s.caches.setFeed(false)
		if ctx.Err() != nil {
			return
		}
		log.Warn("change listener disconnected; caching briefly until it is back", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listenChanges(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.pgConfig)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+changeChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Changes made before LISTEN took effect are not announced: drop
	// everything cached, then trust the feed.
	s.caches.setFeed(true)
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		s.caches.flush()
	}
}
