package throttle_test

import (
	"testing"

	"github.com/recordhub/recordhub/activities/throttle"
)

func TestMemoryRate(t *testing.T)        { checkRate(t, throttle.NewMemory(nil)) }
func TestMemoryInFlight(t *testing.T)    { checkInFlight(t, throttle.NewMemory(nil)) }
func TestMemoryWaitsSpread(t *testing.T) { checkWaitsSpread(t, throttle.NewMemory(nil)) }
func TestMemoryLease(t *testing.T)       { checkLease(t, throttle.NewMemory(nil)) }
