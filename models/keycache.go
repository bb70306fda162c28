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

// keyChannel is the PostgreSQL NOTIFY channel on which key changes are
// announced to every replica.
const keyChannel = "recordhub_api_keys"

// Cache lifetimes. Without a change feed (SQLite, or PostgreSQL while the
// listener is down) entries live shorter than the one second within which a
// revocation must reach every replica. With the feed, entries are dropped
// on every change and the long TTL only bounds memory.
const (
	keyCacheShortTTL = 500 * time.Millisecond
	keyCacheLongTTL  = time.Minute
	keyCacheMaxSize  = 100_000
)

// keyCache caches key lookups by hash, negative answers included (a new key
// has a new random hash, so a cached miss never hides it).
type keyCache struct {
	now func() time.Time

	mu      sync.RWMutex
	entries map[string]keyCacheEntry
	ttl     time.Duration
	// gen counts flushes: a lookup that raced with a flush must not put
	// what it read before the change back into the cache.
	gen uint64
}

type keyCacheEntry struct {
	key *APIKey // nil: no such key
	at  time.Time
}

func newKeyCache(now func() time.Time) *keyCache {
	return &keyCache{now: now, entries: map[string]keyCacheEntry{}, ttl: keyCacheShortTTL}
}

func (c *keyCache) get(hash string, load func() (*APIKey, error)) (*APIKey, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[hash]
	ttl, gen := c.ttl, c.gen
	c.mu.RUnlock()
	if ok && now.Sub(e.at) < ttl {
		return e.key, nil
	}
	k, err := load()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if len(c.entries) >= keyCacheMaxSize {
			c.entries = map[string]keyCacheEntry{}
		}
		c.entries[hash] = keyCacheEntry{key: k, at: now}
	}
	c.mu.Unlock()
	return k, nil
}

func (c *keyCache) flush() {
	c.mu.Lock()
	c.gen++
	c.entries = map[string]keyCacheEntry{}
	c.mu.Unlock()
}

// setFeed switches between the long TTL (a change feed is connected) and
// the short one, dropping every entry either way.
func (c *keyCache) setFeed(connected bool) {
	c.mu.Lock()
	c.gen++
	c.entries = map[string]keyCacheEntry{}
	c.ttl = keyCacheShortTTL
	if connected {
		c.ttl = keyCacheLongTTL
	}
	c.mu.Unlock()
}

func (s *Store) notifyKeyChange(tx *gorm.DB, keyID string) error {
	if s.dialect != Postgres {
		return nil
	}
	if err := tx.Exec("SELECT pg_notify(?, ?)", keyChannel, keyID).Error; err != nil {
		return fmt.Errorf("notify key change: %w", err)
	}
	return nil
}

// WatchKeyChanges listens for key changes made by other replicas until ctx
// ends, so that cached keys can live long. Without it (and always on SQLite)
// cached keys live half a second. It reconnects after failures.
func (s *Store) WatchKeyChanges(ctx context.Context, log *slog.Logger) {
	if s.dialect != Postgres {
		return
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenKeyChanges(ctx)
		s.keys.setFeed(false)
		if ctx.Err() != nil {
			return
		}
		log.Warn("key change listener disconnected; caching keys briefly until it is back", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listenKeyChanges(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.pgURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+keyChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Changes made before LISTEN took effect are not announced: drop
	// everything cached, then trust the feed.
	s.keys.setFeed(true)
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait: %w", err)
		}
		s.keys.flush()
	}
}
