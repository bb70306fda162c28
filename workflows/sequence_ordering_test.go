package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// orderReceiver records, per record, the versions it answered 2xx to, in
// the order it got them. fail decides, under the lock, whether to answer a
// request (its 1-based number overall, and its record) with a 500.
type orderReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	n    int
	got  map[string][]int64
	fail func(n int, recordID string) bool
}

func newOrderReceiver(t testing.TB) *orderReceiver {
	r := &orderReceiver{got: map[string][]int64{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Record struct {
				ID      string `json:"id"`
				Version int64  `json:"version"`
			} `json:"record"`
		}
		b, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.n++
		if r.fail != nil && r.fail(r.n, body.Record.ID) {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		r.got[body.Record.ID] = append(r.got[body.Record.ID], body.Record.Version)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *orderReceiver) versions(recordID string) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got[recordID])
}

func (r *orderReceiver) setFail(f func(n int, recordID string) bool) {
	r.mu.Lock()
	r.fail = f
	r.mu.Unlock()
}

// orderRig is an ordered endpoint on a real Temporal server, its worker
// and dispatcher running.
type orderRig struct {
	t      *testing.T
	c      client.Client
	store  *models.Store
	module *models.Module
	rcv    *orderReceiver
	queue  string
	deliv  *activities.Deliverer
}

func newOrderRig(t *testing.T, c client.Client, d models.Dialect, name string) *orderRig {
	ctx := t.Context()
	r := &orderRig{t: t, c: c, store: storetest.Open(t, d), rcv: newOrderReceiver(t), queue: name + "-" + string(d)}
	tenant, _, _, err := r.store.CreateTenant(ctx, "acme", 600)
	if err != nil {
		t.Fatal(err)
	}
	if r.module, err = r.store.CreateModule(ctx, tenant.ID, models.ModuleInput{
		Slug: ptr("orders"), Name: ptr("Orders"), Fields: &[]models.Field{{Name: "n", Type: models.TypeInteger}},
	}); err != nil {
		t.Fatal(err)
	}
	url := r.rcv.srv.URL
	if _, _, err = r.store.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{
		URL: &url, Events: &[]string{models.EventRecordCreated, models.EventRecordUpdated}, RetryMax: ptr(100), Ordering: ptr(models.OrderingRecord),
	}, nil); err != nil {
		t.Fatal(err)
	}
	if r.deliv, err = activities.NewDeliverer(r.store, activities.Config{
		Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	}); err != nil {
		t.Fatal(err)
	}
	policy := activities.Schedule{Initial: 50 * time.Millisecond, MaxInterval: 200 * time.Millisecond, AttemptTimeout: 5 * time.Second}
	disp := &Dispatcher{Store: r.store, Starter: c, Policy: policy, TaskQueue: r.queue, PollInterval: 50 * time.Millisecond}
	dctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); disp.Run(dctx) }()
	t.Cleanup(func() { stop(); <-done })
	return r
}

func (r *orderRig) startWorker() worker.Worker {
	w := worker.New(r.c, r.queue, worker.Options{})
	Register(w, r.deliv)
	if err := w.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(w.Stop)
	return w
}

// record creates a record and changes it updates times, as fast as the
// store takes it.
func (r *orderRig) record(updates int) string {
	ctx := r.t.Context()
	rec, err := r.store.CreateRecord(ctx, r.module, map[string]any{"n": 0}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	for i := range updates {
		if _, _, err := r.store.UpdateRecord(ctx, r.module, rec.ID, models.RecordPatch{Fields: map[string]any{"n": i + 1}}, nil); err != nil {
			r.t.Fatal(err)
		}
	}
	return rec.ID
}

// waitVersions waits until the receiver has n distinct versions of the
// record.
func (r *orderRig) waitVersions(id string, n int) []int64 {
	var got []int64
	storetest.WhileProgressing(r.t, time.Minute, fmt.Sprintf("%d versions of %s", n, id), func() (int, bool) {
		got = r.rcv.versions(id)
		distinct := len(slices.Compact(slices.Sorted(slices.Values(got))))
		return distinct, distinct >= n
	})
	return got
}

func upTo(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// TestOrderingEndToEnd covers ordering per record on a real Temporal
// server run in-process, against SQLite and PostgreSQL.
func TestOrderingEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of deliveries: not in -short")
	}
	c := recoveryTemporal(t)
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			// The databases at once: a record's deliveries run one after
			// another, each a few round trips to the server (about 200 ms),
			// so these cases wait far more than they compute.
			t.Parallel()
			// 200 rapid updates of one record, every 7th request failing:
			// each version arrives once, in version order.
			t.Run("failing receiver", func(t *testing.T) {
				r := newOrderRig(t, c, d, "order-fail")
				r.rcv.setFail(func(n int, _ string) bool { return n%7 == 0 })
				r.startWorker()
				id := r.record(200)
				if got := r.waitVersions(id, 201); !slices.Equal(got, upTo(201)) {
					t.Errorf("versions arrived as %v, want 1..201 in order, each once", got)
				}
			})
			// A record whose receiver path fails holds back its own later
			// events only: another record's arrive meanwhile.
			t.Run("other records flow", func(t *testing.T) {
				r := newOrderRig(t, c, d, "order-other")
				var a string
				var mu sync.Mutex
				r.rcv.setFail(func(_ int, id string) bool { mu.Lock(); defer mu.Unlock(); return id == a || a == "" })
				r.startWorker()
				mu.Lock()
				a = r.record(0)
				mu.Unlock()
				for i := range 3 {
					if _, _, err := r.store.UpdateRecord(t.Context(), r.module, a, models.RecordPatch{Fields: map[string]any{"n": 10 + i}}, nil); err != nil {
						t.Fatal(err)
					}
				}
				b := r.record(20)
				if got := r.waitVersions(b, 21); !slices.Equal(got, upTo(21)) {
					t.Errorf("b's versions arrived as %v, want 1..21 in order", got)
				}
				if got := r.rcv.versions(a); len(got) != 0 {
					t.Errorf("a, whose receiver fails, got %v", got)
				}
				r.rcv.setFail(nil)
				if got := r.waitVersions(a, 4); !slices.Equal(got, upTo(4)) {
					t.Errorf("a's versions arrived as %v after its receiver recovered, want 1..4 in order", got)
				}
			})
			// A worker stopped mid-sequence: the next one goes on, in order.
			t.Run("worker restart", func(t *testing.T) {
				r := newOrderRig(t, c, d, "order-restart")
				w1 := r.startWorker()
				id := r.record(60)
				storetest.WhileProgressing(t, time.Minute, "a third of the versions", func() (int, bool) {
					n := len(r.rcv.versions(id))
					return n, n >= 20
				})
				w1.Stop()
				r.startWorker()
				got := r.waitVersions(id, 61)
				collapsed := slices.Compact(slices.Clone(got)) // an immediate repeat of the one in flight
				if !slices.Equal(collapsed, upTo(61)) {
					t.Errorf("versions arrived as %v, want 1..61 in order (an immediate repeat allowed)", got)
				}
			})
		})
	}
}
