package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/recordhub/recordhub/workflows"
)

// baselinePayload is the 1 KB the baseline activity POSTs.
var baselinePayload = []byte(`{"bench":"` + strings.Repeat("x", 1024-12) + `"}`)

// baselineHTTP is the activity's client.
var baselineHTTP = &http.Client{Timeout: 10 * time.Second}

// baselinePost is the baseline's only activity: one POST of 1 KB to url,
// with the workflow's id in X-Bench-Id so the receiver counts it once.
func baselinePost(ctx context.Context, url, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(baselinePayload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Bench-Id", id)
	resp, err := baselineHTTP.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}

// baselineWorkflow runs baselinePost once as an activity (with the SDK's
// default retries): the one-activity floor.
func baselineWorkflow(ctx workflow.Context, url string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second},
	})
	return workflow.ExecuteActivity(ctx, baselinePost, url, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil)
}

// baselineLocalWorkflow runs baselinePost once as a local activity, inside
// the workflow task: no activity events, timers or second workflow task to
// persist. It is the cheapest floor of a workflow per delivery.
func baselineLocalWorkflow(ctx workflow.Context, url string) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	return workflow.ExecuteLocalActivity(ctx, baselinePost, url, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil)
}

// The floors' workflow types, by -local.
var baselineTypes = map[bool]string{false: "BenchBaseline", true: "BenchBaselineLocal"}

// baselineResult is what the temporal-baseline sub-command prints on stdout.
type baselineResult struct {
	Started   int    `json:"started"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	FirstErr  string `json:"first_error,omitempty"`
	Elapsed   string `json:"elapsed"`
	// MachineCPU is the whole machine's CPU time from the first start to
	// the last completion, in nanoseconds (see machineCPU).
	MachineCPU int64 `json:"machine_cpu_ns"`
}

// baselineArgs are the temporal-baseline sub-command's flags.
type baselineArgs struct {
	addr, namespace, url string
	n, conc              int
	local, sa            bool
}

func parseBaselineArgs(args []string) (baselineArgs, error) {
	var a baselineArgs
	fs := flag.NewFlagSet("temporal-baseline", flag.ContinueOnError)
	fs.StringVar(&a.addr, "addr", "127.0.0.1:7233", "Temporal frontend host:port")
	fs.StringVar(&a.namespace, "namespace", "default", "Temporal namespace")
	fs.StringVar(&a.url, "url", "", "receiver URL the activity POSTs to")
	fs.IntVar(&a.n, "n", 600, "workflows to start")
	fs.IntVar(&a.conc, "c", 16, "concurrent starters")
	fs.BoolVar(&a.local, "local", false, "POST from a local activity instead of an activity")
	fs.BoolVar(&a.sa, "search-attributes", false, "start each workflow with recordhub's five search attributes (registered first)")
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	if a.url == "" || a.n < 1 || a.conc < 1 {
		return a, errors.New("-url is required, -n and -c at least 1")
	}
	return a, nil
}

// runBaseline is the `temporal-baseline` sub-command: a floor the
// service's delivery rate is compared with. It connects to the given
// Temporal frontend (the service's server), runs a worker of its own on its
// own task queue, starts n workflows whose single step (an activity, or a
// local activity with -local) POSTs 1 KB to url, waits for them and prints
// a baselineResult.
func runBaseline(args []string) int {
	a, err := parseBaselineArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporal-baseline:", err)
		return 2
	}
	c, err := client.Dial(client.Options{
		HostPort:  a.addr,
		Namespace: a.namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporal-baseline: dial:", err)
		return 1
	}
	defer c.Close()
	if a.sa {
		if err := workflows.RegisterSearchAttributes(context.Background(), c, a.namespace); err != nil {
			fmt.Fprintln(os.Stderr, "temporal-baseline:", err)
			return 1
		}
		if err := awaitSearchAttributes(context.Background(), c); err != nil {
			fmt.Fprintln(os.Stderr, "temporal-baseline:", err)
			return 1
		}
	}
	queue := "recordhub-bench-baseline-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	w := worker.New(c, queue, worker.Options{
		MaxConcurrentWorkflowTaskPollers: 32,
		MaxConcurrentActivityTaskPollers: 8,
	})
	w.RegisterWorkflowWithOptions(baselineWorkflow, workflow.RegisterOptions{Name: baselineTypes[false]})
	w.RegisterWorkflowWithOptions(baselineLocalWorkflow, workflow.RegisterOptions{Name: baselineTypes[true]})
	w.RegisterActivity(baselinePost)
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "temporal-baseline: start worker:", err)
		return 1
	}
	defer w.Stop()
	// Tell the bench the worker polls: its clock starts at the first
	// arrival, not here.
	fmt.Fprintln(os.Stderr, "temporal-baseline: worker started on", queue)

	res := startAndWait(context.Background(), c, queue, a)
	_ = json.NewEncoder(os.Stdout).Encode(res)
	if res.Failed > 0 {
		return 1
	}
	return 0
}

// baselineTally counts outcomes from several goroutines.
type baselineTally struct {
	mu  sync.Mutex
	res baselineResult
}

func (t *baselineTally) add(ok bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok {
		t.res.Completed++
		return
	}
	t.res.Failed++
	if t.res.FirstErr == "" && err != nil {
		t.res.FirstErr = err.Error()
	}
}

// startAndWait starts a.n workflows, a.conc at a time, then waits for them
// all, as the service's dispatcher starts one per event without waiting.
func startAndWait(ctx context.Context, c client.Client, queue string, a baselineArgs) baselineResult {
	var (
		t     baselineTally
		next  atomic.Int64
		wg    sync.WaitGroup
		runs  []client.WorkflowRun
		start = time.Now()
	)
	cpu0, _ := machineCPU()
	for range a.conc {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(a.n); i = next.Add(1) {
				id := queue + "-" + strconv.FormatInt(i, 10)
				opts := client.StartWorkflowOptions{
					ID:                       id,
					TaskQueue:                queue,
					EnableEagerStart:         true,
					WorkflowExecutionTimeout: time.Minute,
				}
				if a.sa {
					opts.TypedSearchAttributes = baselineSearchAttributes(id)
				}
				run, err := c.ExecuteWorkflow(ctx, opts, baselineTypes[a.local], a.url)
				if err != nil {
					t.add(false, err)
					continue
				}
				t.mu.Lock()
				t.res.Started++
				runs = append(runs, run)
				t.mu.Unlock()
			}
		})
	}
	wg.Wait()
	sem := make(chan struct{}, 64)
	for _, run := range runs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := run.Get(ctx, nil)
			t.add(err == nil, err)
		})
	}
	wg.Wait()
	cpu1, _ := machineCPU()
	t.res.MachineCPU = int64(cpu1 - cpu0)
	t.res.Elapsed = time.Since(start).Round(time.Millisecond).String()
	return t.res
}

// baselineSearchAttributes are the five attributes recordhub starts a
// delivery with, valued as a delivery's are: ids of the service's shapes,
// the record's unique per workflow.
func baselineSearchAttributes(id string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		workflows.TenantAttr.ValueSet("ten_01JDBENCH0000000000000000"),
		workflows.EndpointAttr.ValueSet("whe_01JDBENCH0000000000000000"),
		workflows.ModuleAttr.ValueSet("mod_01JDBENCH0000000000000000"),
		workflows.RecordAttr.ValueSet("rec_"+id),
		workflows.EventTypeAttr.ValueSet("record_created"),
	)
}

// awaitSearchAttributes waits until the server accepts a start with the
// attributes just registered: a server caches a namespace's attributes and
// rejects them ("no mapping defined") until its cache refreshes. The probe
// runs on a queue no worker polls and is terminated at once.
func awaitSearchAttributes(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	id := "recordhub-bench-sa-probe-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: id, TypedSearchAttributes: baselineSearchAttributes(id)},
			baselineTypes[true], "")
		if err == nil {
			return c.TerminateWorkflow(ctx, id, "", "search attribute probe")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search attributes not accepted: %w", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
