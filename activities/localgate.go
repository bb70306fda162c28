package activities

import "sync"

// DefaultLocalAttemptsPerTenant bounds one tenant's local first attempts in
// flight in one worker process. A local attempt runs inside its delivery's
// workflow task and holds the worker's workflow-task slot until the
// receiver answers, up to the attempt's timeout: a receiver that holds
// every request would otherwise fill all of a worker's slots (the SDK's
// thousand) with one tenant's attempts, and every other tenant's
// deliveries would wait half a minute for one. A healthy receiver needs a
// few: at 200 deliveries a second answered in 20 ms, four are in flight.
const DefaultLocalAttemptsPerTenant = 64

// ErrTypeAttemptDeferred: the delivery's first attempt was not made as a
// local activity, because the tenant's local attempts in flight in this
// worker are at their bound; nothing was sent and no row written. The
// workflow makes it as an attempt activity instead, through the task queue,
// at once.
const ErrTypeAttemptDeferred = "AttemptDeferred"

// localGate counts the local first attempts in flight per tenant.
type localGate struct {
	limit int
	mu    sync.Mutex
	n     map[string]int
}

func newLocalGate(limit int) *localGate {
	if limit <= 0 {
		limit = DefaultLocalAttemptsPerTenant
	}
	return &localGate{limit: limit, n: map[string]int{}}
}

// enter takes one of tenant's places, and reports false when all are
// taken.
func (g *localGate) enter(tenant string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n[tenant] >= g.limit {
		return false
	}
	g.n[tenant]++
	return true
}

// leave gives back a place enter took.
func (g *localGate) leave(tenant string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n[tenant]--; g.n[tenant] <= 0 {
		delete(g.n, tenant)
	}
}
