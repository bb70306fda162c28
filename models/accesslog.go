package models

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"gorm.io/gorm"
)

// AccessLog is one HTTP call, authenticated or not.
type AccessLog struct {
	ID         string `gorm:"primaryKey"`
	TenantID   *string
	KeyID      *string
	Method     string
	Path       string
	Route      string
	ModuleID   *string
	Status     int
	DurationMS float64 `gorm:"column:duration_ms"`
	IP         string  `gorm:"column:ip"`
	UserAgent  string
	RequestID  string
	CreatedAt  time.Time `gorm:"autoCreateTime:false"`
}

// storable makes the row's text columns storable (StorableText), in
// place: a request path or user agent may hold anything, NUL and invalid
// UTF-8 included, which PostgreSQL would refuse, and the whole batch with
// it.
func (l *AccessLog) storable() {
	l.Method, l.Route = StorableText(l.Method, 0), StorableText(l.Route, 0)
	l.Path, l.UserAgent = StorableText(l.Path, MaxAccessLogPath), StorableText(l.UserAgent, MaxUserAgent)
	l.IP, l.RequestID = StorableText(l.IP, 0), StorableText(l.RequestID, 0)
}

// KeyUsage counts a key's calls in one hour.
type KeyUsage struct {
	KeyID       string `gorm:"primaryKey"`
	TenantID    string
	BucketStart time.Time `gorm:"primaryKey"`
	Requests    int64
	Errors      int64
	RateLimited int64
}

// TableName keeps GORM from pluralising.
func (KeyUsage) TableName() string { return "key_usage" }

// IsError reports whether a status counts as an error in usage: 4xx and 5xx
// other than 429, which is counted as rate_limited.
func IsError(status int) bool { return status >= 400 && status != 429 }

// InsertAccessLogs writes a batch of access-log rows, adds them to the
// hourly usage of their keys and moves the keys' last_used_at, in one
// transaction. Rows whose id is already stored are skipped, usage and all:
// a batch tried again after an error that came once it was committed (a
// database crashing under its COMMIT) counts once.
func (s *Store) InsertAccessLogs(ctx context.Context, logs []AccessLog) error {
	if len(logs) == 0 {
		return nil
	}
	for i := range logs {
		logs[i].storable()
	}
	return s.write(ctx, func(tx *gorm.DB) error {
		fresh, err := unstoredAccessLogs(tx, logs)
		if err != nil {
			return err
		}
		if len(fresh) == 0 {
			return nil
		}
		return s.insertAccessLogs(tx, fresh)
	})
}

// unstoredAccessLogs returns the rows of logs whose id is not stored yet.
func unstoredAccessLogs(tx *gorm.DB, logs []AccessLog) ([]AccessLog, error) {
	ids := make([]string, len(logs))
	for i, l := range logs {
		ids[i] = l.ID
	}
	var stored []string
	if err := tx.Model(&AccessLog{}).Where("id IN ?", ids).Pluck("id", &stored).Error; err != nil {
		return nil, fmt.Errorf("look up access logs: %w", err)
	}
	if len(stored) == 0 {
		return logs, nil
	}
	seen := make(map[string]bool, len(stored))
	for _, id := range stored {
		seen[id] = true
	}
	return slices.DeleteFunc(slices.Clone(logs), func(l AccessLog) bool { return seen[l.ID] }), nil
}

// insertAccessLogs inserts rows and adds them to their keys' usage.
func (s *Store) insertAccessLogs(tx *gorm.DB, logs []AccessLog) error {
	type bucket struct {
		key string
		at  time.Time
	}
	usage := map[bucket]*KeyUsage{}
	lastUsed := map[string]time.Time{}
	for _, l := range logs {
		if l.KeyID == nil || l.TenantID == nil {
			continue
		}
		b := bucket{*l.KeyID, l.CreatedAt.UTC().Truncate(time.Hour)}
		u := usage[b]
		if u == nil {
			u = &KeyUsage{KeyID: b.key, TenantID: *l.TenantID, BucketStart: b.at}
			usage[b] = u
		}
		u.Requests++
		switch {
		case l.Status == 429:
			u.RateLimited++
		case IsError(l.Status):
			u.Errors++
		}
		if l.Status != 401 && l.CreatedAt.After(lastUsed[b.key]) {
			lastUsed[b.key] = l.CreatedAt
		}
	}
	if err := tx.CreateInBatches(logs, 200).Error; err != nil {
		return fmt.Errorf("insert access logs: %w", err)
	}
	for _, u := range usage {
		err := tx.Exec(`INSERT INTO key_usage (key_id, tenant_id, bucket_start, requests, errors, rate_limited)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (key_id, bucket_start) DO UPDATE SET
				requests = key_usage.requests + excluded.requests,
				errors = key_usage.errors + excluded.errors,
				rate_limited = key_usage.rate_limited + excluded.rate_limited`,
			u.KeyID, u.TenantID, u.BucketStart, u.Requests, u.Errors, u.RateLimited).Error
		if err != nil {
			return fmt.Errorf("add usage: %w", err)
		}
	}
	return s.touchKeys(tx, lastUsed)
}

// AccessLogQuery filters a tenant's access logs.
type AccessLogQuery struct {
	// Page is the page to read; with After, only its Limit counts.
	Page Page
	// After, when set, reads the rows after this position (a previous
	// page's last row) instead of skipping Page's offset.
	After *Position
	// CountUpTo, when above 0, bounds the count: the total answered is
	// at most CountUpTo+1, and above CountUpTo means "more than that".
	CountUpTo int64
	KeyID     string
	Status    int
	Method    string
	From, To  *time.Time
}

// ListAccessLogs returns a page of the tenant's access logs, newest first
// (created_at, then id), and how many match q's filters (After aside).
func (s *Store) ListAccessLogs(ctx context.Context, tenantID string, q AccessLogQuery) ([]AccessLog, int64, error) {
	db := s.r.WithContext(ctx).Model(&AccessLog{}).Where("tenant_id = ?", tenantID)
	if q.KeyID != "" {
		db = db.Where("key_id = ?", q.KeyID)
	}
	if q.Status != 0 {
		db = db.Where("status = ?", q.Status)
	}
	if q.Method != "" {
		db = db.Where("method = ?", q.Method)
	}
	if q.From != nil {
		db = db.Where("created_at >= ?", q.From.UTC())
	}
	if q.To != nil {
		db = db.Where("created_at < ?", q.To.UTC())
	}
	total, err := s.count(ctx, db, q.CountUpTo)
	if err != nil {
		return nil, 0, fmt.Errorf("count access logs: %w", err)
	}
	logs := []AccessLog{}
	if err := page(db, "created_at", q.Page, q.After).Find(&logs).Error; err != nil {
		return nil, 0, fmt.Errorf("list access logs: %w", err)
	}
	return logs, total, nil
}

// UsageBucket is a key's usage over one hour or day.
type UsageBucket struct {
	BucketStart time.Time
	Requests    int64
	Errors      int64
	RateLimited int64
}

// KeyUsageBuckets returns a key's usage in [from, to), by hour or by day
// (UTC), oldest first; buckets without calls are left out.
func (s *Store) KeyUsageBuckets(ctx context.Context, tenantID, keyID string, byDay bool, from, to time.Time) ([]UsageBucket, error) {
	var rows []KeyUsage
	err := s.r.WithContext(ctx).Where("tenant_id = ? AND key_id = ? AND bucket_start >= ? AND bucket_start < ?",
		tenantID, keyID, from.UTC(), to.UTC()).Order("bucket_start").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("load usage: %w", err)
	}
	byStart := map[time.Time]*UsageBucket{}
	for _, r := range rows {
		start := r.BucketStart.UTC()
		if byDay {
			start = time.Date(start.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
		}
		b := byStart[start]
		if b == nil {
			b = &UsageBucket{BucketStart: start}
			byStart[start] = b
		}
		b.Requests += r.Requests
		b.Errors += r.Errors
		b.RateLimited += r.RateLimited
	}
	out := make([]UsageBucket, 0, len(byStart))
	for _, b := range byStart {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BucketStart.Before(out[j].BucketStart) })
	return out, nil
}
