// Package accesslog writes access-log rows off the request path: requests
// enqueue without blocking, and one goroutine writes them in batches.
package accesslog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/recordhub/recordhub/models"
)

// Store persists batches of rows.
type Store interface {
	InsertAccessLogs(ctx context.Context, logs []models.AccessLog) error
}

// Options tune a Writer.
type Options struct {
	// QueueSize bounds the rows waiting to be written; when it is full new
	// rows are dropped and counted, never waited for.
	QueueSize int
	// BatchSize is the most rows written in one transaction.
	BatchSize int
	// Interval is the longest a row waits before its batch is written.
	Interval time.Duration
	// OnDrop is called for each dropped row (a metric).
	OnDrop func()
	Log    *slog.Logger
}

// Writer queues access-log rows and writes them in batches.
type Writer struct {
	store Store
	opts  Options
	queue chan models.AccessLog
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

// Depth returns how many rows wait to be written.
func (w *Writer) Depth() int { return len(w.queue) }

// Run writes batches until Close is called, then writes what is left.
func (w *Writer) Run(ctx context.Context) {
	defer close(w.done)
	batch := make([]models.AccessLog, 0, w.opts.BatchSize)
	ticker := time.NewTicker(w.opts.Interval)
	defer ticker.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		w.write(context.WithoutCancel(ctx), batch)
		batch = batch[:0]
	}
	add := func(l models.AccessLog) {
		batch = append(batch, l)
		if len(batch) >= w.opts.BatchSize {
			flush()
		}
	}
	// drainAndFlush writes every row queued now.
	drainAndFlush := func() {
		for {
			select {
			case l := <-w.queue:
				add(l)
			default:
				flush()
				return
			}
		}
	}
	for {
		select {
		case l := <-w.queue:
			add(l)
		case <-ticker.C:
			flush()
		case done := <-w.flushes:
			drainAndFlush()
			close(done)
		case <-w.stop:
			drainAndFlush()
			return
		}
	}
}

// Flush writes the rows enqueued before it was called (and perhaps some
// enqueued since), and returns once they are written, or when ctx ends or
// the Writer has stopped. A row whose batch could not be written counts as
// written: Flush waits, it does not report on the store.
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

// write stores a batch, trying a few times: a database blip must not lose
// rows, but a dead database must not stall the queue forever either.
func (w *Writer) write(ctx context.Context, batch []models.AccessLog) {
	var err error
	for attempt := range 5 {
		if err = w.store.InsertAccessLogs(ctx, batch); err == nil {
			return
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	w.opts.Log.Error("access log batch lost", "rows", len(batch), "error", err)
	for range batch {
		w.opts.OnDrop()
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
