package changefeed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api/changefeed"
	"github.com/recordhub/recordhub/models"
)

// follow reads a subscription from after until it has n changes, and
// returns their sequence numbers.
func follow(t *testing.T, sub *changefeed.Sub, after models.ChangePosition, n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []int64
	for len(got) < n {
		es, err := sub.Next(ctx, after, 7, time.Second)
		if err != nil {
			t.Errorf("after %d changes: %v", len(got), err)
			return got
		}
		for _, e := range es {
			got = append(got, e.Position.Seq)
			after = e.Position
		}
	}
	return got
}

// TestSubscriptionsShareReads: every subscription of a module gets every
// change once, in order, while the source is read once per wake-up, not
// once per subscription.
func TestSubscriptionsShareReads(t *testing.T) {
	src := newMemSource()
	f := changefeed.New(src, changefeed.Options{Poll: time.Hour})
	defer f.Close()
	const subs, batches, per = 50, 20, 5
	var wg sync.WaitGroup
	results := make([][]int64, subs)
	opened := make([]*changefeed.Sub, subs)
	for i := range subs {
		sub, err := f.Subscribe("t", "k", "m")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		opened[i] = sub
	}
	// The hub starts at the module's end, here the start: once it has,
	// every subscription from there reads what the hub reads.
	<-f.HubReady("t", "m")
	for i := range subs {
		wg.Go(func() { results[i] = follow(t, opened[i], models.ChangePosition{}, batches*per) })
	}
	for range batches {
		src.add(per)
	}
	wg.Wait()
	for i, got := range results {
		for j, seq := range got {
			if seq != int64(j+1) {
				t.Fatalf("subscription %d: change %d is %d, want %d", i, j, seq, j+1)
			}
		}
	}
	if f.Hubs() != 1 {
		t.Errorf("%d hubs for one module, want 1", f.Hubs())
	}
	// One start, at most a read per batch and its wake-up, a read after
	// the last: never one per subscription per change.
	if reads := src.reads.Load(); reads > 2*batches+2 {
		t.Errorf("%d reads of the source for %d batches and %d subscriptions", reads, batches, subs)
	}
}

// TestSubscriptionBehindTheRing: a subscription behind the ring, which
// holds the newest changes only, reads the rest from the source by pages,
// and gets every change once.
func TestSubscriptionBehindTheRing(t *testing.T) {
	src := newMemSource()
	f := changefeed.New(src, changefeed.Options{Poll: time.Hour, Ring: 8})
	defer f.Close()
	sub, err := f.Subscribe("t", "k", "m")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	<-f.HubReady("t", "m")
	// The hub reads all 30 and keeps the last 8; the subscription starts
	// before them.
	src.add(30)
	got := follow(t, sub, models.ChangePosition{}, 30)
	for j, seq := range got {
		if seq != int64(j+1) {
			t.Fatalf("change %d is %d, want %d", j, seq, j+1)
		}
	}
	if len(got) != 30 {
		t.Errorf("%d changes, want 30", len(got))
	}
}

// TestSubscriptionBounds: past the key's bound, then the tenant's, a
// subscription is refused with the bound; closing one makes room; closing
// the last stops the module's hub.
func TestSubscriptionBounds(t *testing.T) {
	f := changefeed.New(newMemSource(), changefeed.Options{PerKey: 2, PerTenant: 3})
	defer f.Close()
	a1, _ := f.Subscribe("t", "a", "m")
	a2, _ := f.Subscribe("t", "a", "m")
	var lim *changefeed.LimitError
	if _, err := f.Subscribe("t", "a", "m"); !errors.As(err, &lim) || lim.Per != "key" || lim.Limit != 2 {
		t.Errorf("a third of the key: %v, want the key's bound of 2", err)
	}
	b1, err := f.Subscribe("t", "b", "m2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Subscribe("t", "b", "m"); !errors.As(err, &lim) || lim.Per != "tenant" {
		t.Errorf("a fourth of the tenant: %v, want the tenant's bound", err)
	}
	if _, err := f.Subscribe("u", "c", "m"); err != nil {
		t.Errorf("another tenant: %v", err)
	}
	a1.Close()
	a1.Close() // twice is once
	if f.Streams() != 3 {
		t.Errorf("%d streams, want 3", f.Streams())
	}
	b1.Close()
	a2.Close()
	if f.Hubs() != 1 {
		t.Errorf("%d hubs, want the other tenant's one", f.Hubs())
	}
}

// TestCloseEndsSubscriptions: Close ends a subscription waiting for
// changes, and refuses new ones.
func TestCloseEndsSubscriptions(t *testing.T) {
	f := changefeed.New(newMemSource(), changefeed.Options{})
	sub, err := f.Subscribe("t", "k", "m")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	done := make(chan error, 1)
	go func() {
		_, err := sub.Next(context.Background(), models.ChangePosition{}, 10, time.Hour)
		done <- err
	}()
	f.Close()
	if err := <-done; !errors.Is(err, changefeed.ErrClosed) {
		t.Errorf("a waiting Next after Close: %v, want ErrClosed", err)
	}
	if _, err := f.Subscribe("t", "k", "m"); !errors.Is(err, changefeed.ErrClosed) {
		t.Errorf("a subscription after Close: %v, want ErrClosed", err)
	}
}
