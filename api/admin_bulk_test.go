package api_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
	"github.com/recordhub/recordhub/workflows"
)

// workflowCounter counts the workflows started through it, of any type.
type workflowCounter struct {
	mu  sync.Mutex
	ids []string
}

func (f *workflowCounter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, o.ID)
	return nil, nil
}

func (f *workflowCounter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ids)
}

// TestBulkRunningPerTenant: a tenant runs at most 4 resyncs and recoveries
// at once, together (RECORDHUB_BULK_RUNNING_PER_TENANT's default), however
// many endpoints it has. Of twelve calls at once, a resync or a recovery
// of twelve endpoints, four start and the eight others answer 409
// conflict naming the setting and the four running; four workflows are
// started. Another tenant is not held back. Once one of the four ended,
// the next call starts; a call on an endpoint whose own resync runs still
// answers the endpoint's conflict, naming that resync.
func TestBulkRunningPerTenant(t *testing.T) {
	const bound, calls = 4, 12
	const setting = "RECORDHUB_BULK_RUNNING_PER_TENANT"
	forEachDB(t, func(t *testing.T, d models.Dialect) {
		ctx := t.Context()
		starter := &workflowCounter{}
		store := storetest.Open(t, d)
		e := newEnvOn(t, store,
			withResyncer(resyncer{&workflows.Resyncs{Starter: starter, Store: store}}),
			withRecoverer(recoverer{&workflows.Recoveries{Starter: starter, Store: store}}))
		since := map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}
		type ask struct {
			endpoint, kind, path string
			body                 any
		}
		var asks []ask
		for i := range calls {
			ep := e.createEndpoint(map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i), "events": []string{"record_snapshot", "record_created"}})["id"].(string)
			if i%2 == 0 {
				asks = append(asks, ask{ep, "resync", "/api/admin/webhook-endpoints/" + ep + "/resync", nil})
			} else {
				asks = append(asks, ask{ep, "recovery", "/api/admin/webhook-endpoints/" + ep + "/recover", since})
			}
		}

		answers := make([]*resp, calls)
		var wg sync.WaitGroup
		for i, a := range asks {
			wg.Go(func() { answers[i] = e.call("POST", a.path, e.admin, a.body) })
		}
		wg.Wait()
		// started: the id of each accepted call's resync or recovery, by
		// the index of its call.
		started := map[int]string{}
		var refused []map[string]any
		var refusedAt []int
		for i, a := range answers {
			switch a.status {
			case 202:
				m := a.json()
				started[i] = fmt.Sprint(m["id"])
				if asks[i].kind == "recovery" {
					started[i] = fmt.Sprint(m["recovery_id"])
				}
			case 409:
				refused = append(refused, a.json())
				refusedAt = append(refusedAt, i)
			default:
				t.Errorf("%s of %s: %d %s, want 202 or 409", asks[i].kind, asks[i].endpoint, a.status, a.body)
			}
		}
		if len(started) != bound || len(refused) != calls-bound {
			t.Fatalf("%d started, %d refused; want %d and %d", len(started), len(refused), bound, calls-bound)
		}
		var want []string
		for _, id := range started {
			want = append(want, id)
		}
		slices.Sort(want)
		for _, r := range refused {
			var got []string
			running, _ := r["running"].([]any)
			for _, x := range running {
				got = append(got, fmt.Sprint(x.(map[string]any)["id"]))
			}
			slices.Sort(got)
			if r["error"] != "conflict" || r["setting"] != setting || r["limit"] != float64(bound) ||
				!strings.Contains(fmt.Sprint(r["message"]), setting) || !slices.Equal(got, want) {
				t.Errorf("refusal %v, want conflict naming %s (limit %d) and the running %v", r, setting, bound, want)
			}
		}
		if n := starter.count(); n != bound {
			t.Errorf("%d workflows started, want %d", n, bound)
		}

		// Another tenant's resync is not held back.
		other, _, otherKey, err := store.CreateTenant(ctx, "other", 100_000)
		if err != nil {
			t.Fatal(err)
		}
		u := "https://hooks.example.com/other"
		oep, _, err := store.CreateEndpoint(ctx, other.ID, models.EndpointInput{URL: &u, Events: &[]string{models.EventRecordSnapshot}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.call("POST", "/api/admin/webhook-endpoints/"+oep.ID+"/resync", otherKey, nil).want(202)

		// One ends: the next call starts, and the tenant is at its bound
		// again.
		var ended int
		for i := range started {
			ended = i
			break
		}
		if asks[ended].kind == "resync" {
			err = store.FinishResync(ctx, started[ended], models.ResyncCompleted, models.ResyncProgress{}, "", time.Now())
		} else {
			err = store.FinishRecovery(ctx, started[ended], models.RecoveryCompleted, models.RecoveryProgress{}, "", time.Now())
		}
		if err != nil {
			t.Fatal(err)
		}
		next := asks[refusedAt[0]]
		e.call("POST", next.path, e.admin, next.body).want(202)
		e.call("POST", asks[refusedAt[1]].path, e.admin, asks[refusedAt[1]].body).want(409)

		// An endpoint running its own resync answers as before.
		for i, id := range started {
			if i == ended || asks[i].kind != "resync" {
				continue
			}
			if r := e.call("POST", asks[i].path, e.admin, nil).want(409).json(); r["resync_id"] != id {
				t.Errorf("a second resync of %s: %v, want the endpoint's conflict naming %s", asks[i].endpoint, r, id)
			}
			break
		}
	})
}
