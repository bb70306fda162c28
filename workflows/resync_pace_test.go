package workflows

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// startLog notes when each delivery was started through it, by tenant.
type startLog struct {
	Starter
	mu sync.Mutex
	at map[string][]time.Time
}

func (s *startLog) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	began := time.Now()
	run, err := s.Starter.ExecuteWorkflow(ctx, o, wf, args...)
	if in, ok := args[0].(DeliveryInput); ok && err == nil {
		s.mu.Lock()
		s.at[in.TenantID] = append(s.at[in.TenantID], began)
		s.mu.Unlock()
	}
	return run, err
}

// busiest is the most starts of the tenant in any window of length w, and
// how many it started in all.
func (s *startLog) busiest(tenantID string, w time.Duration) (most, all int) {
	s.mu.Lock()
	at := slices.Clone(s.at[tenantID])
	s.mu.Unlock()
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := range at {
		n, _ := slices.BinarySearchFunc(at[i:], at[i].Add(w), func(t, end time.Time) int { return t.Compare(end) })
		most = max(most, n)
	}
	return most, len(at)
}

// TestBulkPacePerTenant: tenant A runs two resyncs and a recovery at once,
// tenant B one resync, on two workers, each with a store of its own on one
// database (two processes), on a real Temporal server run in-process,
// against SQLite and PostgreSQL. The deliveries that A's three start,
// together, over both workers, keep to RECORDHUB_BULK_RATE_PER_TENANT's
// default of 20 a second in every one-second window, and B's to theirs;
// every one is started. The bound is on the count in a window, so a slow
// machine, which starts fewer, cannot fail it; before the pace, A's 120
// starts went out within a second or two.
func TestBulkPacePerTenant(t *testing.T) {
	const (
		rate    = 20 // deliveries a second, the default
		records = 40
	)
	c := recoveryTemporal(t)
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := t.Context()
			db := storetest.NewDB(t, d)
			stores := []*models.Store{db.Open(t, models.Options{}), db.Open(t, models.Options{})}
			store := stores[0]
			queue := "bulk-pace-" + string(d)
			policy := activities.Schedule{Initial: 200 * time.Millisecond, MaxInterval: time.Second, AttemptTimeout: 5 * time.Second}
			ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			t.Cleanup(ok.Close)
			failing := newFlippingReceiver(t)

			type tenant struct {
				id  string
				mod *models.Module
			}
			newTenant := func(name string) tenant {
				tn, _, _, err := store.CreateTenant(ctx, name, 600)
				if err != nil {
					t.Fatal(err)
				}
				mod, err := store.CreateModule(ctx, tn.ID, models.ModuleInput{
					Slug: ptr("orders"), Name: ptr("Orders"), Fields: &[]models.Field{{Name: "n", Type: models.TypeInteger}},
				})
				if err != nil {
					t.Fatal(err)
				}
				return tenant{tn.ID, mod}
			}
			endpoint := func(tn tenant, url string, events []string, retryMax int) *models.WebhookEndpoint {
				ep, _, err := store.CreateEndpoint(ctx, tn.id, models.EndpointInput{URL: &url, Events: &events, RetryMax: &retryMax}, nil)
				if err != nil {
					t.Fatal(err)
				}
				return ep
			}
			a, b := newTenant("a"), newTenant("b")

			log := &startLog{Starter: c, at: map[string][]time.Time{}}
			for _, s := range stores {
				deliver, err := activities.NewDeliverer(s, activities.Config{Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
				if err != nil {
					t.Fatal(err)
				}
				w := worker.New(c, queue, worker.Options{MaxConcurrentWorkflowTaskPollers: 32, MaxConcurrentActivityTaskPollers: 8})
				Register(w, deliver)
				RegisterResync(w, activities.NewResyncer(s, &Snapshots{Starter: log, Policy: policy, TaskQueue: queue}, 0, nil))
				RegisterRecovery(w, activities.NewRecoverer(s, &Replayer{Starter: log, Store: s, Policy: policy, TaskQueue: queue}, 0, nil))
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(w.Stop)
			}

			// A's records fail their deliveries to one endpoint, for the
			// recovery; B's go nowhere.
			recovered := endpoint(a, failing.srv.URL, []string{models.EventRecordCreated}, 1)
			for _, tn := range []tenant{a, b} {
				for i := range records {
					if _, err := store.CreateRecord(ctx, tn.mod, map[string]any{"n": i}, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			dctx, stop := context.WithCancel(ctx)
			disp := &Dispatcher{Store: store, Starter: c, Policy: policy, TaskQueue: queue, PollInterval: 50 * time.Millisecond}
			dispatched := make(chan struct{})
			go func() { defer close(dispatched); disp.Run(dctx) }()
			storetest.WhileProgressing(t, time.Minute, "A's failed deliveries", func() (int, bool) {
				_, n, err := store.ListDeliveries(ctx, a.id, models.DeliveryQuery{Page: models.Page{Page: 1, Limit: 1}, EndpointID: recovered.ID, Succeeded: ptr(false)})
				if err != nil {
					t.Fatal(err)
				}
				return int(n), n == records
			})
			stop()
			<-dispatched
			failing.ok.Store(true)

			snapshots := []string{models.EventRecordSnapshot}
			resyncs := &Resyncs{Starter: c, Store: store, TaskQueue: queue}
			recoveries := &Recoveries{Starter: c, Store: store, TaskQueue: queue}
			type started struct {
				tenant, endpoint, id string
				resync               bool
			}
			var runs []started
			for _, tn := range []tenant{a, a, b} {
				ep := endpoint(tn, ok.URL, snapshots, 5)
				rs, err := resyncs.Start(ctx, tn.id, ep.ID)
				if err != nil {
					t.Fatal(err)
				}
				runs = append(runs, started{tn.id, ep.ID, rs.ID, true})
			}
			rec, err := recoveries.Start(ctx, a.id, recovered.ID, time.Now().Add(-time.Hour), nil)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, started{a.id, recovered.ID, rec.ID, false})

			for _, r := range runs {
				storetest.WhileProgressing(t, time.Minute, "the resyncs and the recovery to end", func() (int, bool) {
					if r.resync {
						rs, err := store.GetResync(ctx, r.tenant, r.endpoint, r.id)
						if err != nil {
							t.Fatal(err)
						}
						if rs.Status == models.ResyncFailed {
							t.Fatalf("resync %s failed: %s", rs.ID, rs.Error)
						}
						return rs.Examined, rs.Status != models.ResyncRunning
					}
					rc, err := store.GetRecovery(ctx, r.tenant, r.endpoint, r.id)
					if err != nil {
						t.Fatal(err)
					}
					if rc.Status == models.RecoveryFailed {
						t.Fatalf("recovery %s failed: %s", rc.ID, rc.Error)
					}
					return rc.Found, rc.Status != models.RecoveryRunning
				})
			}

			// At most the rate in any second, and a little more: a start
			// noted late (the machine busy between the pace and the note)
			// may fall into the next second's window.
			const most = rate*5/4 + 2
			for _, tc := range []struct {
				name   string
				tenant string
				want   int
			}{{"A (two resyncs and a recovery)", a.id, 3 * records}, {"B (one resync)", b.id, records}} {
				busiest, all := log.busiest(tc.tenant, time.Second)
				t.Logf("%s: %d deliveries started, at most %d in one second", tc.name, all, busiest)
				if all != tc.want {
					t.Errorf("%s: %d deliveries started, want %d", tc.name, all, tc.want)
				}
				if busiest > most {
					t.Errorf("%s: %d deliveries started within one second, want at most %d (%d a second)", tc.name, busiest, most, rate)
				}
			}
		})
	}
}
