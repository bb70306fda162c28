package models

import "sync"

// changesWake is a broadcast: every waiter holds the channel of the
// moment, which the next signal closes and replaces. A signal with no one
// waiting costs a channel.
type changesWake struct {
	mu sync.Mutex
	ch chan struct{}
}

func (w *changesWake) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *changesWake) broadcast() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// ChangesWake returns a channel that is closed soon after events are next
// committed by this process, or, once ListenEvents runs, announced by
// another (PostgreSQL). Any number of readers may wait on it, unlike
// EventWake, which is the dispatcher's alone; take a new one after each
// wake. A commit between a read and this call is not signalled: call it
// before reading.
func (s *Store) ChangesWake() <-chan struct{} { return s.changesWake.wait() }
