package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// mirror is a receiver that keeps what a resync promises its receivers:
// the current state of every record, built by applying each event or
// snapshot whose record version is newer than the one it holds (a
// deletion at the version it holds or newer). It remembers every event id
// it got, by record version, deduplicating on the event id as receivers
// do (an attempt that succeeded on a worker that stopped before reporting
// it is made again).
type mirror struct {
	srv *httptest.Server
	mu  sync.Mutex
	// state is the record's newest version and fields; deleted marks a
	// tombstone.
	state map[string]mirrored
	// events is every event id received, with its type and record version.
	events map[string]mirrorEvent
}

type mirrored struct {
	version int64
	fields  map[string]any
	deleted bool
}

type mirrorEvent struct {
	typ      string
	recordID string
	version  int64
}

func newMirror(t testing.TB) *mirror {
	m := &mirror{state: map[string]mirrored{}, events: map[string]mirrorEvent{}}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			ID     string `json:"id"`
			Event  string `json:"event"`
			Record struct {
				ID      string         `json:"id"`
				Version int64          `json:"version"`
				Fields  map[string]any `json:"fields"`
			} `json:"record"`
		}
		b, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if _, seen := m.events[body.ID]; seen {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		m.events[body.ID] = mirrorEvent{typ: body.Event, recordID: body.Record.ID, version: body.Record.Version}
		cur, held := m.state[body.Record.ID]
		switch {
		case body.Event == models.EventRecordDeleted:
			if !held || body.Record.Version >= cur.version {
				m.state[body.Record.ID] = mirrored{version: body.Record.Version, deleted: true}
			}
		case !held || body.Record.Version > cur.version:
			m.state[body.Record.ID] = mirrored{version: body.Record.Version, fields: body.Record.Fields}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// snapshots counts the record_snapshot events received.
func (m *mirror) snapshots() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.events {
		if e.typ == models.EventRecordSnapshot {
			n++
		}
	}
	return n
}

func (m *mirror) snapshot() (map[string]mirrored, map[string]mirrorEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := make(map[string]mirrored, len(m.state))
	for k, v := range m.state {
		st[k] = v
	}
	evs := make(map[string]mirrorEvent, len(m.events))
	for k, v := range m.events {
		evs[k] = v
	}
	return st, evs
}

// stallingSnapshots starts snapshot deliveries until it has started after
// of them; later starts block until their context ends: a worker that
// hangs mid-page until it is stopped.
type stallingSnapshots struct {
	activities.SnapshotStarter
	after   int64
	started atomic.Int64
	stalled chan struct{}
	once    sync.Once
}

func (s *stallingSnapshots) StartSnapshot(ctx context.Context, ev *models.Event, ep *models.WebhookEndpoint) error {
	if s.started.Add(1) > s.after {
		s.once.Do(func() { close(s.stalled) })
		<-ctx.Done()
		return ctx.Err()
	}
	return s.SnapshotStarter.StartSnapshot(ctx, ev, ep)
}

// TestResyncEndToEnd: an endpoint's 10,000 records are resynced while
// records keep being created, changed and deleted, on the Temporal server
// recordhub embeds, run in-process, against SQLite and PostgreSQL. The
// worker running the resync hangs mid-way and is stopped; a second worker
// finishes it. The receiver ends with exactly the current state of every
// record, and got each record version once from the resync's snapshots
// and the live events committed after its position.
func TestResyncEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("ten thousand deliveries: not in -short")
	}
	records := resyncRecords(t)
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			// Both at once, each with a server of its own: one alone
			// keeps well under the machine's CPU busy (TestResyncRate:
			// about half of two cores), as its deliveries wait on the
			// server's database more than on the CPU.
			t.Parallel()
			ctx := t.Context()
			db := storetest.NewDB(t, d)
			store := db.Open(t, models.Options{BulkRate: -1}) // unpaced: ten thousand at the pace would take minutes
			c := embeddedTemporal(t)
			queue := "resync-" + string(d)
			policy := activities.Schedule{Initial: 200 * time.Millisecond, MaxInterval: time.Second, AttemptTimeout: 5 * time.Second}
			tenant, _, _, err := store.CreateTenant(ctx, "acme", 600)
			if err != nil {
				t.Fatal(err)
			}
			mod, err := store.CreateModule(ctx, tenant.ID, models.ModuleInput{
				Slug: ptr("orders"), Name: ptr("Orders"), Fields: &[]models.Field{{Name: "n", Type: models.TypeInteger}},
			})
			if err != nil {
				t.Fatal(err)
			}
			// The records the receiver lost: written before the endpoint
			// exists, their events dispatched to nobody. Several writers
			// at once, as the API's clients would: the store commits them
			// in groups.
			began := time.Now()
			ids := seedRecords(t, store, mod, records)
			for {
				pending, err := store.PendingEvents(ctx, 1000)
				if err != nil {
					t.Fatal(err)
				}
				if len(pending) == 0 {
					break
				}
				done := make([]string, len(pending))
				for i, e := range pending {
					done[i] = e.ID
				}
				if err := store.MarkDispatched(ctx, done); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d records written in %s", records, time.Since(began).Round(time.Millisecond))
			rcv := newMirror(t)
			url := rcv.srv.URL
			ep, _, err := store.CreateEndpoint(ctx, tenant.ID, models.EndpointInput{URL: &url, Events: &[]string{
				models.EventRecordSnapshot, models.EventRecordCreated, models.EventRecordUpdated, models.EventRecordDeleted,
			}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			deliver, err := activities.NewDeliverer(store, activities.Config{
				Schedule: activities.Schedule{AttemptTimeout: 5 * time.Second}, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			})
			if err != nil {
				t.Fatal(err)
			}
			snapshots := &Snapshots{Starter: c, Policy: policy, TaskQueue: queue, Eager: true}
			startWorker := func(s activities.SnapshotStarter) worker.Worker {
				w := worker.New(c, queue, worker.Options{MaxConcurrentWorkflowTaskPollers: 32, MaxConcurrentActivityTaskPollers: 8})
				Register(w, deliver)
				RegisterResync(w, activities.NewResyncer(store, s, 0, nil))
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(w.Stop)
				return w
			}
			stall := &stallingSnapshots{SnapshotStarter: snapshots, after: int64(records) * 35 / 100, stalled: make(chan struct{})}
			w1 := startWorker(stall)
			dctx, stopDispatch := context.WithCancel(ctx)
			disp := &Dispatcher{Store: store, Starter: c, Policy: policy, TaskQueue: queue, PollInterval: 50 * time.Millisecond}
			dispatched := make(chan struct{})
			go func() { defer close(dispatched); disp.Run(dctx) }()
			defer func() { stopDispatch(); <-dispatched }()

			resyncs := &Resyncs{Starter: c, Store: store, TaskQueue: queue, PageHeartbeat: 5 * time.Second}
			began = time.Now()
			rs, err := resyncs.Start(ctx, tenant.ID, ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := ResyncWorkflowID(ep.ID, 1); rs.WorkflowID != want {
				t.Errorf("workflow id %q, want %q", rs.WorkflowID, want)
			}
			// Writes go on through the resync: updates, creates, deletes,
			// ten a second, from its start until every snapshot has
			// arrived. The endpoint had no event before the resync's
			// position: every live event it gets is one of the writes.
			wctx, stopWrites := context.WithCancel(ctx)
			var writes atomic.Int64
			writerDone := make(chan error, 1)
			go func() {
				rnd := rand.New(rand.NewPCG(1, 2))
				live := append([]string(nil), ids...)
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				// A budget keeps most records for the snapshots however
				// slowly the resync runs on a busy machine.
				for range max(records/10, 20) {
					select {
					case <-wctx.Done():
						writerDone <- nil
						return
					case <-tick.C:
					}
					var err error
					switch k := rnd.IntN(10); {
					case k < 7:
						_, _, err = store.UpdateRecord(wctx, mod, live[rnd.IntN(len(live))], models.RecordPatch{Fields: map[string]any{"n": rnd.IntN(1 << 30)}}, nil)
					case k < 9:
						var r *models.Record
						if r, err = store.CreateRecord(wctx, mod, map[string]any{"n": rnd.IntN(1 << 30)}, nil); err == nil {
							live = append(live, r.ID)
						}
					default:
						i := rnd.IntN(len(live))
						_, err = store.DeleteRecord(wctx, mod, live[i])
						live = append(live[:i], live[i+1:]...)
					}
					if err != nil && wctx.Err() == nil {
						writerDone <- fmt.Errorf("write: %w", err)
						return
					}
					writes.Add(1)
				}
				writerDone <- nil
			}()

			storetest.WhileProgressing(t, time.Minute, "the resync to reach its stall", func() (int, bool) {
				select {
				case <-stall.stalled:
					return 0, true
				default:
				}
				if cur, err := store.GetResync(ctx, tenant.ID, ep.ID, rs.ID); err == nil && cur.Status != models.ResyncRunning {
					t.Fatalf("resync ended %s (%q) before its stall", cur.Status, cur.Error)
				}
				return int(stall.started.Load()), false
			})
			t.Logf("stalled after %s", time.Since(began).Round(time.Millisecond))
			w1.Stop()
			startWorker(snapshots)
			var done *models.WebhookResync
			storetest.WhileProgressing(t, time.Minute, "the resync to end", func() (int, bool) {
				done, err = store.GetResync(ctx, tenant.ID, ep.ID, rs.ID)
				if err != nil {
					return -1, false
				}
				return done.Examined, done.Status != models.ResyncRunning
			})
			if done.Status != models.ResyncCompleted || done.Examined != done.Sent+done.Covered || done.Sent == 0 || done.Covered == 0 {
				t.Fatalf("resync ended %s (%q): examined %d, sent %d, covered %d; want completed, some sent and some covered by live writes",
					done.Status, done.Error, done.Examined, done.Sent, done.Covered)
			}
			storetest.WhileProgressing(t, time.Minute, "every snapshot to arrive", func() (int, bool) {
				n := rcv.snapshots()
				return n, n >= done.Sent
			})
			took := time.Since(began)
			stopWrites()
			if err := <-writerDone; err != nil {
				t.Fatal(err)
			}

			// The receiver ends with the current state of every record.
			want := currentRecords(t, store, mod)
			var diff string
			storetest.WhileProgressing(t, time.Minute, "the receiver to hold the current state of every record", func() (int, bool) {
				st, evs := rcv.snapshot()
				diff = mirrorDiff(st, want)
				return len(evs), diff == ""
			})

			// Each record version once: from the snapshots and the live
			// events committed after the resync's position.
			_, evs := rcv.snapshot()
			type rv struct {
				record  string
				version int64
			}
			seen := map[rv]string{}
			live := 0
			after := db.EventsCommittedAfter(t, rs.Position)
			for id, e := range evs {
				if e.typ != models.EventRecordSnapshot {
					if !after[id] {
						t.Errorf("event %s (%s of %s) committed before the resync's position reached the receiver: the endpoint did not exist then", id, e.typ, e.recordID)
						continue
					}
					live++
				}
				k := rv{e.recordID, e.version}
				if e.typ == models.EventRecordDeleted {
					// A deletion carries the record as it was, at the
					// version it last had.
					k.version = -k.version
				}
				if prev, dup := seen[k]; dup {
					t.Errorf("record %s version %d sent twice: %s and %s (%s)", e.recordID, e.version, prev, id, e.typ)
				}
				seen[k] = id
			}
			if live == 0 {
				t.Fatal("no live event after the resync's position: the writes did not overlap it")
			}
			t.Logf("%s: %d records, %d writes during the resync; sent %d snapshots, %d records covered by %d live events after the position",
				d, done.Total, writes.Load(), done.Sent, done.Covered, live)
			t.Logf("%s: every snapshot delivered %s after the start, worker restart included (%.0f records/s)",
				d, took.Round(time.Millisecond), float64(done.Sent)/took.Seconds())
		})
	}
}

// seedRecords creates n records of m, eight writers at once, and returns
// their ids.
func seedRecords(t testing.TB, store *models.Store, m *models.Module, n int) []string {
	t.Helper()
	const writers = 8
	ids := make([]string, n)
	errs := make(chan error, writers)
	var next atomic.Int64
	for range writers {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					errs <- nil
					return
				}
				r, err := store.CreateRecord(t.Context(), m, map[string]any{"n": i}, nil)
				if err != nil {
					errs <- err
					return
				}
				ids[i] = r.ID
			}
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// mirrorDiff says how the receiver's records differ from the current
// records; "" when they are the same.
func mirrorDiff(st map[string]mirrored, want []models.Record) string {
	cur := map[string]bool{}
	for _, r := range want {
		cur[r.ID] = true
		got, ok := st[r.ID]
		if !ok || got.deleted {
			return fmt.Sprintf("record %s (version %d) missing", r.ID, r.Version)
		}
		if got.version != r.Version || fmt.Sprint(got.fields["n"]) != fmt.Sprint(r.Fields["n"]) {
			return fmt.Sprintf("record %s: version %d n %v, want version %d n %v", r.ID, got.version, got.fields["n"], r.Version, r.Fields["n"])
		}
	}
	for id, m := range st {
		if !m.deleted && !cur[id] {
			return fmt.Sprintf("record %s held but deleted", id)
		}
	}
	return ""
}

// currentRecords reads every record of the module.
func currentRecords(t testing.TB, s *models.Store, m *models.Module) []models.Record {
	t.Helper()
	var out []models.Record
	for page := 1; ; page++ {
		got, _, err := s.ListRecords(t.Context(), m, models.RecordQuery{Page: models.Page{Page: page, Limit: 500}, Sort: "created_at"})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range got {
			r := models.Record{ID: v.ID, Version: v.Version}
			if err := json.Unmarshal(v.Fields, &r.Fields); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		if len(got) < 500 {
			return out
		}
	}
}
