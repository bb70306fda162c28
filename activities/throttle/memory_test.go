package throttle_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/recordhub/recordhub/activities/throttle"
)

func TestMemoryRate(t *testing.T)        { checkRate(t, throttle.NewMemory(nil)) }
func TestMemoryInFlight(t *testing.T)    { checkInFlight(t, throttle.NewMemory(nil)) }
func TestMemoryWaitsSpread(t *testing.T) { checkWaitsSpread(t, throttle.NewMemory(nil)) }
func TestMemoryLease(t *testing.T)       { checkLease(t, throttle.NewMemory(nil)) }
func TestMemoryLate(t *testing.T)        { checkLate(t, throttle.NewMemory(nil)) }

// TestMemoryPlacesForgotten: places kept for waiters that never come back
// (their deliveries ended) stop counting in the queue once their grace has
// passed: a caller then is not placed behind them.
func TestMemoryPlacesForgotten(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	th := throttle.NewMemory(func() time.Time { return now })
	limits := throttle.Limits{PerSecond: 10}
	ask := func(w string) throttle.Grant {
		t.Helper()
		g, err := th.Acquire(t.Context(), throttle.Request{Key: "whe_1", Waiter: w, Limits: limits, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for i := range 100 {
		ask(fmt.Sprint("gone", i))
	}
	now = now.Add(30 * time.Second)
	if g := ask("soon"); g.Permit != nil || g.Wait < 8*time.Second {
		t.Errorf("a caller while 99 places are kept: %+v, want placed behind them", g)
	}
	now = now.Add(2 * time.Minute)
	if g := ask("later"); g.Permit == nil || !g.Permit.At.Equal(now) {
		t.Errorf("a caller once the places' grace has passed: %+v, want a slot at once", g)
	}
}

func TestMemorySendLog(t *testing.T)      { checkSendLog(t, throttle.NewMemory(nil), false) }
func TestMemorySendLogWrote(t *testing.T) { checkSendLog(t, throttle.NewMemory(nil), true) }
