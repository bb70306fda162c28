// Package accesslog writes access-log rows off the request path: requests
// enqueue without blocking, and one goroutine writes them in batches.
package accesslog

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recordhub/recordhub/models"
)

// Store persists batches of rows.
type Store interface {
	InsertAccessLogs(ctx context.Context, logs []models.AccessLog) error
}

// Options tune a Writer.
type Options struct {
	// QueueSize bounds the rows waiting to be taken from the queue; when it
	// is full new rows are dropped and counted, never waited for.
	QueueSize int
	// BatchSize is the most rows written in one transaction.
	BatchSize int
	// Interval is the longest a row waits before its batch is written.
	Interval time.Duration
	// MaxHeld bounds the rows kept for another try while the database
	// refuses them (QueueSize when zero): past it the oldest are dropped,
	// counted and logged, so an outage costs bounded memory.
	MaxHeld int
	// RetryMax is the longest wait between two tries of rows the
	// database refused (5 s when zero); the first wait is a tenth of it.
	RetryMax time.Duration
	// OnDrop is called for each dropped row (a metric).
	OnDrop func()
	Log    *slog.Logger
}

// Writer queues access-log rows and writes them in batches.
type Writer struct {
	store Store
	opts  Options
	queue chan models.AccessLog
	// held counts the rows taken from the queue and not yet written, for
	// Depth (Run owns the rows themselves).
	held atomic.Int64
	// flushes carries Flush's requests to Run: each is closed once the
	// rows queued before it are written.
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// New returns a Writer; call Run to start writing.
func New(store Store, opts Options) *Writer {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 65536
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	if opts.Interval <= 0 {
		opts.Interval = 200 * time.Millisecond
	}
	if opts.MaxHeld <= 0 {
		opts.MaxHeld = opts.QueueSize
	}
	opts.MaxHeld = max(opts.MaxHeld, opts.BatchSize)
	if opts.RetryMax <= 0 {
		opts.RetryMax = 5 * time.Second
	}
	if opts.OnDrop == nil {
		opts.OnDrop = func() {}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Writer{
		store: store, opts: opts,
		queue:   make(chan models.AccessLog, opts.QueueSize),
		flushes: make(chan chan struct{}),
		stop:    make(chan struct{}), done: make(chan struct{}),
	}
}

// Enqueue queues a row without blocking; it reports false when the queue was
// full and the row was dropped.
func (w *Writer) Enqueue(l models.AccessLog) bool {
	select {
	case w.queue <- l:
		return true
	default:
		w.opts.OnDrop()
		return false
	}
}

// Depth returns how many rows wait to be written: queued, or kept for
// another try while the database refuses them.
func (w *Writer) Depth() int { return len(w.queue) + int(w.held.Load()) }

// shutdownTries bounds the tries of the rows left at Close: a database
// that is down then would otherwise hold the shutdown.
const shutdownTries = 5

// Run writes batches until Close is called, then writes what is left.
// Rows the database refuses are kept, oldest first, and tried again after
// a backoff, while new rows keep being taken from the queue.
func (w *Writer) Run(ctx context.Context) {
	defer close(w.done)
	ctx = context.WithoutCancel(ctx)
	r := &rows{w: w}
	ticker := time.NewTicker(w.opts.Interval)
	defer ticker.Stop()
	// retry fires when a backoff ends; nil while the database takes rows.
	var retry <-chan time.Time
	var wait time.Duration
	write := func() {
		if err := r.writeAll(ctx); err != nil {
			if wait == 0 {
				w.opts.Log.Warn("access log batch not written; kept for another try", "rows", r.len(), "error", err)
			}
			wait = min(max(2*wait, w.opts.RetryMax/10), w.opts.RetryMax)
			retry = time.After(wait)
			return
		}
		if wait > 0 {
			w.opts.Log.Info("access log rows written again after failures")
		}
		wait, retry = 0, nil
	}
	take := func(l models.AccessLog) {
		r.add(l)
		if retry == nil && r.len() >= w.opts.BatchSize {
			write()
		}
	}
	drain := func() {
		for {
			select {
			case l := <-w.queue:
				take(l)
			default:
				return
			}
		}
	}
	for {
		select {
		case l := <-w.queue:
			take(l)
		case <-ticker.C:
			if retry == nil {
				write()
			}
		case <-retry:
			write()
		case done := <-w.flushes:
			drain()
			write()
			close(done)
		case <-w.stop:
			drain()
			for try := range shutdownTries {
				if err := r.writeAll(ctx); err == nil {
					return
				} else if try == shutdownTries-1 {
					w.opts.Log.Error("access log rows lost at shutdown", "rows", r.len(), "error", err)
					for range r.len() {
						w.opts.OnDrop()
					}
					return
				}
				time.Sleep(time.Duration(try+1) * 100 * time.Millisecond)
			}
		}
	}
}

// rows are the rows taken from the queue and not yet written, oldest
// first, at most MaxHeld of them.
type rows struct {
	w    *Writer
	list []models.AccessLog
	// dropped counts the rows dropped past MaxHeld in this outage, for
	// the log.
	dropped int
}

func (r *rows) len() int { return len(r.list) }

func (r *rows) add(l models.AccessLog) {
	if len(r.list) >= r.w.opts.MaxHeld {
		// The newest rows say most about an outage in progress. Slicing
		// off the front is O(1); append copies only the rows kept when it
		// grows the array.
		r.list = r.list[1:]
		r.w.opts.OnDrop()
		if r.dropped++; r.dropped == 1 || r.dropped%r.w.opts.BatchSize == 0 {
			r.w.opts.Log.Warn("access log rows dropped: too many kept while the database refuses them", "dropped", r.dropped, "kept", r.w.opts.MaxHeld)
		}
	}
	r.list = append(r.list, l)
	r.w.held.Store(int64(len(r.list)))
}

// writeAll writes the rows in batches, oldest first, and stops at the
// first batch the store refuses (it stays, with the rows after it).
func (r *rows) writeAll(ctx context.Context) error {
	for len(r.list) > 0 {
		n := min(len(r.list), r.w.opts.BatchSize)
		if err := r.w.store.InsertAccessLogs(ctx, r.list[:n]); err != nil {
			return err
		}
		r.list = r.list[n:]
		r.w.held.Store(int64(len(r.list)))
		r.dropped = 0
	}
	return nil
}

// Flush writes the rows enqueued before it was called (and perhaps some
// enqueued since), and returns once they are written, or when ctx ends or
// the Writer has stopped. It tries once: rows the database refuses stay
// kept for the next try, and Flush returns all the same (it waits, it
// does not report on the store).
func (w *Writer) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case w.flushes <- done:
	case <-w.done:
		return nil // Close wrote everything
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes every queued row and returns when done or when ctx ends. Rows enqueued after Close are written only if they
// arrive before the queue is drained; call it after the HTTP server stopped.
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() { close(w.stop) })
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
