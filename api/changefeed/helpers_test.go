package changefeed_test

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/recordhub/recordhub/models"
)

// memSource is a Source in memory: changes appended in order, and the
// number of reads made of it.
type memSource struct {
	mu      sync.Mutex
	changes []models.Change
	horizon models.ChangePosition
	wake    chan struct{}
	reads   atomic.Int64
}

func newMemSource() *memSource { return &memSource{wake: make(chan struct{})} }

// add appends n changes and wakes the readers.
func (s *memSource) add(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		seq := int64(len(s.changes) + 1)
		s.changes = append(s.changes, models.Change{Position: models.ChangePosition{Seq: seq}, Type: models.EventRecordCreated, Payload: `{"record":{"fields":{}}}`})
	}
	close(s.wake)
	s.wake = make(chan struct{})
}

func (s *memSource) Changes(_ context.Context, _, _ string, after models.ChangePosition, limit int) ([]models.Change, error) {
	s.reads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []models.Change
	for _, c := range s.changes {
		if after.Less(c.Position) && len(out) < limit {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *memSource) LatestChange(context.Context, string, string) (models.ChangePosition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.changes) == 0 {
		return s.horizon, nil
	}
	return s.changes[len(s.changes)-1].Position, nil
}

func (s *memSource) CheckChangeCursor(_ context.Context, _ string, p models.ChangePosition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Less(s.horizon) {
		return models.ErrCursorExpired
	}
	return nil
}

func (s *memSource) ChangesWake() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wake
}
