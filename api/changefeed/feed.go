package changefeed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/recordhub/recordhub/models"
)

// Source is what hubs read: the store.
type Source interface {
	Changes(ctx context.Context, tenantID, moduleID string, after models.ChangePosition, limit int) ([]models.Change, error)
	LatestChange(ctx context.Context, tenantID, moduleID string) (models.ChangePosition, error)
	CheckChangeCursor(ctx context.Context, moduleID string, p models.ChangePosition) error
	ChangesWake() <-chan struct{}
}

// Defaults of Options.
const (
	DefaultPerKey    = 200
	DefaultPerTenant = 1000
	DefaultRing      = 4096
	DefaultPoll      = 250 * time.Millisecond
)

// pageSize is how many changes one read of the store takes.
const pageSize = 500

// Options bound and tune a Feed.
type Options struct {
	// PerKey and PerTenant bound the subscriptions of one API key and of
	// one tenant in this process; DefaultPerKey and DefaultPerTenant when
	// zero.
	PerKey, PerTenant int
	// Ring is how many of a module's newest changes its hub keeps for its
	// subscriptions; DefaultRing when zero.
	Ring int
	// Poll is how often a hub looks for changes without a wake-up;
	// DefaultPoll when zero.
	Poll time.Duration
	Log  *slog.Logger
}

// Feed holds the hubs of a process.
type Feed struct {
	src  Source
	opts Options

	mu        sync.Mutex
	hubs      map[string]*hub
	perKey    map[string]int
	perTenant map[string]int
	closed    bool
	done      chan struct{}
}

// New returns a Feed reading src.
func New(src Source, opts Options) *Feed {
	if opts.PerKey <= 0 {
		opts.PerKey = DefaultPerKey
	}
	if opts.PerTenant <= 0 {
		opts.PerTenant = DefaultPerTenant
	}
	if opts.Ring <= 0 {
		opts.Ring = DefaultRing
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Feed{
		src: src, opts: opts, hubs: map[string]*hub{},
		perKey: map[string]int{}, perTenant: map[string]int{}, done: make(chan struct{}),
	}
}

// ErrClosed ends subscriptions when the feed closes.
var ErrClosed = errors.New("change feed closed")

// LimitError refuses a subscription past a bound.
type LimitError struct {
	// Per is "key" or "tenant".
	Per   string
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("at most %d change streams per %s are open at once on this server", e.Limit, e.Per)
}

// Subscribe opens a subscription to a module's changes for an API key of
// a tenant, or refuses it with a *LimitError or ErrClosed. Close it.
func (f *Feed) Subscribe(tenantID, keyID, moduleID string) (*Sub, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	if f.perKey[keyID] >= f.opts.PerKey {
		return nil, &LimitError{Per: "key", Limit: f.opts.PerKey}
	}
	if f.perTenant[tenantID] >= f.opts.PerTenant {
		return nil, &LimitError{Per: "tenant", Limit: f.opts.PerTenant}
	}
	f.perKey[keyID]++
	f.perTenant[tenantID]++
	name := tenantID + "/" + moduleID
	h := f.hubs[name]
	if h == nil {
		h = newHub(f, tenantID, moduleID)
		f.hubs[name] = h
	}
	h.subs++
	return &Sub{feed: f, hub: h, tenantID: tenantID, keyID: keyID}, nil
}

// Streams returns the number of open subscriptions.
func (f *Feed) Streams() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.perTenant {
		n += c
	}
	return n
}

// Hubs returns the number of running hubs.
func (f *Feed) Hubs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.hubs)
}

// Close ends every subscription, now and to come: their Next returns
// ErrClosed.
func (f *Feed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.done)
	}
}

// Done is closed when the feed closes.
func (f *Feed) Done() <-chan struct{} { return f.done }

func (f *Feed) release(s *Sub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	dec := func(m map[string]int, k string) {
		if m[k]--; m[k] <= 0 {
			delete(m, k)
		}
	}
	dec(f.perKey, s.keyID)
	dec(f.perTenant, s.tenantID)
	if s.hub.subs--; s.hub.subs == 0 {
		delete(f.hubs, s.hub.tenantID+"/"+s.hub.moduleID)
		s.hub.stop()
	}
}

// Sub is one reader's subscription to a module's changes.
type Sub struct {
	feed            *Feed
	hub             *hub
	tenantID, keyID string
	closeOnce       sync.Once
}

// Close ends the subscription.
func (s *Sub) Close() { s.closeOnce.Do(func() { s.feed.release(s) }) }

// Next returns up to max of the module's changes after position after,
// waiting for one at most wait: nil when none came. It reads the hub's
// ring, or the store when after is behind it. It returns ErrClosed once
// the feed closed, models.ErrCursorExpired when changes after after were
// purged, and ctx's error once it ended.
func (s *Sub) Next(ctx context.Context, after models.ChangePosition, max int, wait time.Duration) ([]*Entry, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	h := s.hub
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.feed.done:
		return nil, ErrClosed
	case <-timer.C:
		return nil, nil
	}
	for {
		select {
		case <-s.feed.done:
			return nil, ErrClosed
		default:
		}
		out, behind, changed := h.after(after, max)
		if len(out) > 0 {
			return out, nil
		}
		if behind {
			return s.catchUp(ctx, after, max)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.feed.done:
			return nil, ErrClosed
		case <-timer.C:
			return nil, nil
		}
	}
}

// catchUp reads a page of changes after after from the store, for a
// subscription behind the ring.
func (s *Sub) catchUp(ctx context.Context, after models.ChangePosition, max int) ([]*Entry, error) {
	cs, err := s.feed.src.Changes(ctx, s.tenantID, s.hub.moduleID, after, max)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		// Behind the ring, yet nothing after it is kept: what lay
		// between was purged.
		if err := s.feed.src.CheckChangeCursor(ctx, s.hub.moduleID, after); err != nil {
			return nil, err
		}
		return nil, nil
	}
	out := make([]*Entry, len(cs))
	for i := range cs {
		out[i] = &Entry{Change: cs[i]}
	}
	return out, nil
}

// Entry is a change as the hub hands it out, with its record decoded once
// for every subscription that filters on it.
type Entry struct {
	models.Change
	once   sync.Once
	record *models.ChangeRecord
}

// Matches reports whether the change passes f.
func (e *Entry) Matches(f models.ChangeFilter) bool {
	if !f.NeedsRecord() {
		return f.Matches(e.Type, nil)
	}
	e.once.Do(func() { e.record, _ = models.DecodeChangeRecord(e.Payload) })
	return e.record != nil && f.Matches(e.Type, e.record)
}
