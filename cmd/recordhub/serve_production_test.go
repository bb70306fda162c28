package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common"

	"github.com/recordhub/recordhub/cmd/internal/pgtemporal"
	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// startTemporal starts a separate Temporal server on PostgreSQL for the
// test, stopped when it ends; the test is skipped where PostgreSQL is not
// reachable (unless services are required). Its log is shown when the test
// fails.
func startTemporal(t *testing.T) *pgtemporal.Server {
	t.Helper()
	storetest.PostgresURL(t) // skips, or fails when required, without PostgreSQL
	admin := cmp.Or(os.Getenv("RECORDHUB_TEST_DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a cold build of the server takes minutes
	defer cancel()
	var log syncBuffer
	showOnFailure(t, "temporal server", &log)
	// Small pools: other packages' tests use the same PostgreSQL server.
	// The visibility indexes trimmed, as the operators' document advises:
	// TestProductionShape searches deliveries as operators would.
	srv, err := pgtemporal.Start(ctx, pgtemporal.Options{PostgresURL: admin, Log: &log, LogLevel: "warn", MaxConns: 6, TrimVisibility: true})
	if err != nil {
		t.Fatalf("temporal server on PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stop temporal: %v", err)
		}
	})
	return srv
}

// showOnFailure logs the last lines of log when the test fails.
func showOnFailure(t *testing.T, name string, log *syncBuffer) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		lines := strings.Split(strings.TrimSpace(log.String()), "\n")
		t.Logf("last lines of the %s's log:\n%s", name, strings.Join(lines[max(len(lines)-40, 0):], "\n"))
	})
}

// metrics reads a worker's /metrics, by metric name.
func metrics(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("%s/metrics: %v", base, err)
	}
	return mfs
}

// counter is the counter of mf whose labels hold every name=value pair of
// labels, summed over the samples that match (all of them without labels).
func counter(mf *dto.MetricFamily, labels map[string]string) float64 {
	var sum float64
	for _, m := range mf.GetMetric() {
		matched := 0
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
				matched++
			}
		}
		if matched == len(labels) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// namespaceID is the id of srv's namespace, which workflow ids hash to
// shards with.
func namespaceID(t *testing.T, srv *pgtemporal.Server) string {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ns, err := c.WorkflowService().DescribeNamespace(t.Context(), &workflowservice.DescribeNamespaceRequest{Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	return ns.GetNamespaceInfo().GetId()
}

// TestProductionShape runs the production shape: one API
// replica and two workers on PostgreSQL and Redis against a separate
// Temporal server on PostgreSQL, all sharing one task queue. A burst of
// record changes is delivered exactly once each, both workers make at
// least 35 % of the attempts, and fewer than 1 % of starts are refused as
// already started; on the visibility table trimmed as the operators'
// document advises, a delivery is found by every search an operator
// would type. Then Temporal is killed: the API stays ready and takes
// writes, and their events arrive once Temporal answers again (the test
// logs how long after it started workflows on every shard: about as soon
// as it does, because the client reconnects at least every 500 ms, which
// TestTemporalClientReconnects holds without a clock).
func TestProductionShape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server: not in -short")
	}
	srv := startTemporal(t)
	nsID := namespaceID(t, srv)
	cfg := webhookConfig(t, models.Postgres)
	cfg.RedisURL = storetest.RedisURL()
	cfg.TemporalAddress, cfg.TemporalNamespace = srv.Address(), srv.Namespace()
	cfg.TemporalTaskQueue = "recordhub-e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfg.SecretKey = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	cfg.DatabaseMaxConns = 6 // three processes and Temporal share the server with other tests

	apiCfg, workerCfg := cfg, cfg
	apiCfg.Role, workerCfg.Role = RoleAPI, RoleWorker
	var apiLog syncBuffer
	showOnFailure(t, "api", &apiLog)
	api, _ := startServiceLogging(t, apiCfg, io.Discard, &apiLog)
	workers := make([]string, 2)
	for i := range workers {
		var log syncBuffer
		showOnFailure(t, fmt.Sprintf("worker %d", i+1), &log)
		workers[i], _ = startServiceLogging(t, workerCfg, io.Discard, &log)
	}
	key := cfg.BootstrapAdminKey
	mod := jsonCall(t, "POST", api+"/api/admin/modules", key, map[string]any{"slug": "orders", "name": "Orders",
		"fields": []any{map[string]any{"name": "title", "type": "string"}}})
	rcv := newDeliveries(t)
	endpoint := jsonCall(t, "POST", api+"/api/admin/webhook-endpoints", key, map[string]any{"url": rcv.srv.URL, "events": []string{"record_created"}})["id"].(string)
	burstKey := jsonCall(t, "POST", api+"/api/admin/keys", key, map[string]any{"name": "burst", "permissions": map[string]any{"*": []string{"write"}}, "rate_limit_per_minute": 1_000_000})["key"].(string)
	create := func() string {
		t.Helper()
		st, m := call(t, "POST", api+"/api/modules/"+mod["id"].(string)+"/records", burstKey, `{"fields":{"title":"x"}}`)
		if st != http.StatusCreated {
			t.Fatalf("create: %d %v", st, m)
		}
		return m["id"].(string)
	}

	const n = 400
	concurrently(n, 16, func() { create() })
	storetest.WhileProgressing(t, time.Minute, "every delivery", func() (int, bool) {
		got := rcv.events()
		return got, got == n
	})

	for id, c := range rcv.doubled() {
		t.Errorf("event %s delivered %d times", id, c)
	}
	var attempts, started, refused []float64
	for _, w := range workers {
		m := metrics(t, w)
		attempts = append(attempts, counter(m["recordhub_webhook_attempts_total"], nil))
		starts := m["recordhub_webhook_workflow_starts_total"]
		started = append(started, counter(starts, map[string]string{"result": "started"}))
		refused = append(refused, counter(starts, map[string]string{"result": "already_started"}))
	}
	t.Logf("attempts per worker %v, starts %v, refused %v", attempts, started, refused)
	if total := attempts[0] + attempts[1]; total != n {
		t.Errorf("%v attempts for %d events", total, n)
	}
	for i, a := range attempts {
		if share := a / n; share < 0.35 {
			t.Errorf("worker %d made %.0f%% of the attempts, want at least 35%%", i+1, 100*share)
		}
	}
	if s := started[0] + started[1]; s != n {
		t.Errorf("%v starts for %d events", s, n)
	}
	if r := refused[0] + refused[1]; r >= 0.01*n {
		t.Errorf("%v starts refused as already started, want under 1%% of %d", r, n)
	}

	// One more delivery, searched as operators search deliveries in the
	// Temporal UI, on the trimmed visibility table.
	last := create()
	storetest.Eventually(t, time.Minute, "one more record delivered", func() bool { _, ok := rcv.delivered(last); return ok })
	ref, _ := rcv.delivered(last)
	ref.endpoint = endpoint
	checkSearchable(t, srv.Address(), srv.Namespace(), ref)

	// Temporal goes away: the API replica stays ready and takes writes; the
	// workers are not ready.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	storetest.Eventually(t, 30*time.Second, "a worker to see Temporal gone", func() bool {
		st, _ := call(t, "GET", workers[0]+"/readyz", "", "")
		return st == http.StatusServiceUnavailable
	})
	if st, body := call(t, "GET", api+"/readyz", "", ""); st != http.StatusOK {
		t.Errorf("API replica's readyz with Temporal down: %d %v", st, body)
	}
	var written []string
	for range 5 {
		written = append(written, create())
	}

	// Temporal comes back. It answers again when a workflow can be started
	// on every history shard (its frontend answers health checks earlier,
	// before history is ready, and each shard loads on its own): a client
	// of our own starts throwaway workflows, one id per shard, to note when
	// the last shard took one.
	probeCtx, stopProbe := context.WithCancel(t.Context())
	defer stopProbe()
	c, err := client.NewLazyClient(client.Options{HostPort: srv.Address(), Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	shardBack := make(chan time.Time, pgtemporal.NumHistoryShards)
	for shard := range int32(pgtemporal.NumHistoryShards) {
		go func() {
			for i := 0; probeCtx.Err() == nil; i++ {
				id := fmt.Sprintf("probe-%d", i)
				if common.WorkflowIDToHistoryShard(nsID, id, pgtemporal.NumHistoryShards) != shard+1 {
					continue
				}
				ctx, cancel := context.WithTimeout(probeCtx, 250*time.Millisecond)
				_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "probe"}, "Probe")
				cancel()
				if err == nil {
					shardBack <- time.Now()
					return
				}
			}
		}()
	}
	if err := srv.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	var back time.Time
	for range pgtemporal.NumHistoryShards {
		select {
		case at := <-shardBack:
			if at.After(back) {
				back = at
			}
		case <-time.After(time.Minute):
			t.Fatal("Temporal did not start workflows on every shard within a minute of its restart")
		}
	}
	storetest.Eventually(t, time.Minute, "the events written while Temporal was down", func() bool {
		for _, id := range written {
			if _, ok := rcv.at(id); !ok {
				return false
			}
		}
		return true
	})
	// Reported, not judged: a loaded machine may take longer, and what
	// made them wait up to 120 s is held by TestTemporalClientReconnects.
	for i, id := range written {
		got, _ := rcv.at(id)
		t.Logf("event %d written during the outage arrived %s after Temporal answered", i+1, got.Sub(back).Round(time.Millisecond))
	}
	if total := rcv.events(); total != n+1+len(written) {
		t.Errorf("%d events delivered, want %d", total, n+1+len(written))
	}
}
