package changefeed

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/recordhub/recordhub/models"
)

// hub reads one module's changes for every subscription of the process.
type hub struct {
	feed               *Feed
	tenantID, moduleID string
	// subs is guarded by the feed's mutex.
	subs int
	stop context.CancelFunc
	// ready is closed once the hub knows where it starts.
	ready chan struct{}

	mu sync.RWMutex
	// ring holds every change in (from, pos], in order, at most the
	// feed's Ring of them.
	ring      []*Entry
	from, pos models.ChangePosition
	// changed is closed, and replaced, when changes were added.
	changed chan struct{}
}

func newHub(f *Feed, tenantID, moduleID string) *hub {
	ctx, stop := context.WithCancel(context.Background())
	h := &hub{
		feed: f, tenantID: tenantID, moduleID: moduleID, stop: stop,
		ready: make(chan struct{}), changed: make(chan struct{}),
		ring: make([]*Entry, 0, 2*f.opts.Ring),
	}
	go h.run(ctx)
	return h
}

// run starts at the module's latest position and reads what follows at
// every wake-up until its last subscription closes.
func (h *hub) run(ctx context.Context) {
	tick := time.NewTicker(h.feed.opts.Poll)
	defer tick.Stop()
	for warned := false; ; warned = true {
		pos, err := h.feed.src.LatestChange(ctx, h.tenantID, h.moduleID)
		if err == nil {
			h.mu.Lock()
			h.from, h.pos = pos, pos
			h.mu.Unlock()
			close(h.ready)
			break
		}
		if ctx.Err() != nil {
			return
		}
		if !warned {
			// Once per outage: it is tried again at every poll.
			h.feed.opts.Log.Warn("change feed: cannot read a module's latest position; trying again", "module_id", h.moduleID, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	failing := false
	for {
		// Taken before the read: a commit during it wakes the next one.
		wake := h.feed.src.ChangesWake()
		err := h.read(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !failing {
			h.feed.opts.Log.Warn("change feed: reading a module's changes failed; streams wait", "module_id", h.moduleID, "error", err)
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

// read adds the changes after pos to the ring, by pages.
func (h *hub) read(ctx context.Context) error {
	for {
		cs, err := h.feed.src.Changes(ctx, h.tenantID, h.moduleID, h.pos, pageSize)
		if err != nil {
			return err
		}
		if len(cs) > 0 {
			h.add(cs)
		}
		if len(cs) < pageSize {
			return nil
		}
	}
}

// add appends changes to the ring, dropping its oldest past the bound,
// and wakes the subscriptions.
func (h *hub) add(cs []models.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	limit := h.feed.opts.Ring
	for i := range cs {
		if len(h.ring) == cap(h.ring) {
			// Full at twice the bound: keep the newest half, in place.
			n := copy(h.ring, h.ring[len(h.ring)-limit:])
			clear(h.ring[n:])
			h.ring = h.ring[:n]
		}
		h.ring = append(h.ring, &Entry{Change: cs[i]})
	}
	if extra := len(h.ring) - limit; extra > 0 {
		h.from = h.ring[extra-1].Position
	}
	h.pos = cs[len(cs)-1].Position
	close(h.changed)
	h.changed = make(chan struct{})
}

// after returns up to max of the ring's changes after p; or behind when p
// is before what the ring holds; or, when nothing follows p yet, the
// channel the next addition closes.
func (h *hub) after(p models.ChangePosition, max int) (out []*Entry, behind bool, changed <-chan struct{}) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if p.Less(h.from) {
		return nil, true, nil
	}
	if !p.Less(h.pos) {
		return nil, false, h.changed
	}
	// Only the newest Ring entries are served; older ones wait to be
	// dropped.
	live := h.ring[max0(len(h.ring)-h.feed.opts.Ring):]
	i := sort.Search(len(live), func(i int) bool { return p.Less(live[i].Position) })
	end := min(len(live), i+max)
	return append([]*Entry(nil), live[i:end]...), false, nil
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
