package main

import (
	"bytes"
	"context"
	"encoding/json"
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

// baselineWorkflow runs baselinePost once (with the SDK's default retries).
func baselineWorkflow(ctx workflow.Context, url string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second},
	})
	return workflow.ExecuteActivity(ctx, baselinePost, url, workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil)
}

// baselineResult is what the temporal-baseline sub-command prints on stdout.
type baselineResult struct {
	Started   int    `json:"started"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	FirstErr  string `json:"first_error,omitempty"`
	Elapsed   string `json:"elapsed"`
}

// runBaseline is the `temporal-baseline` sub-command: the floor the
// service's delivery rate is compared with. It connects to the given
// Temporal frontend (the service's embedded server), runs a worker of its
// own on its own task queue, starts n workflows whose single activity POSTs
// 1 KB to url, waits for them and prints a baselineResult.
func runBaseline(args []string) int {
	fs := flag.NewFlagSet("temporal-baseline", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:7233", "Temporal frontend host:port")
	ns := fs.String("namespace", "default", "Temporal namespace")
	url := fs.String("url", "", "receiver URL the activity POSTs to")
	n := fs.Int("n", 600, "workflows to start")
	conc := fs.Int("c", 16, "concurrent starters")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" || *n < 1 || *conc < 1 {
		fmt.Fprintln(os.Stderr, "temporal-baseline: -url is required, -n and -c at least 1")
		return 2
	}
	ctx := context.Background()
	c, err := client.Dial(client.Options{
		HostPort:  *addr,
		Namespace: *ns,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporal-baseline: dial:", err)
		return 1
	}
	defer c.Close()
	queue := "recordhub-bench-baseline-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	w := worker.New(c, queue, worker.Options{
		MaxConcurrentWorkflowTaskPollers: 32,
		MaxConcurrentActivityTaskPollers: 8,
	})
	w.RegisterWorkflowWithOptions(baselineWorkflow, workflow.RegisterOptions{Name: "BenchBaseline"})
	w.RegisterActivity(baselinePost)
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "temporal-baseline: start worker:", err)
		return 1
	}
	defer w.Stop()
	// Tell the bench the worker polls: its clock starts at the first
	// arrival, not here.
	fmt.Fprintln(os.Stderr, "temporal-baseline: worker started on", queue)

	var (
		res    baselineResult
		mu     sync.Mutex
		next   atomic.Int64
		wg     sync.WaitGroup
		start  = time.Now()
		prefix = queue + "-"
		runs   []client.WorkflowRun
		record = func(ok bool, err error) {
			mu.Lock()
			defer mu.Unlock()
			if ok {
				res.Completed++
				return
			}
			res.Failed++
			if res.FirstErr == "" && err != nil {
				res.FirstErr = err.Error()
			}
		}
	)
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(*n) {
					return
				}
				run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
					ID:                       prefix + strconv.FormatInt(i, 10),
					TaskQueue:                queue,
					EnableEagerStart:         true,
					WorkflowExecutionTimeout: time.Minute,
				}, "BenchBaseline", *url)
				if err != nil {
					record(false, err)
					continue
				}
				mu.Lock()
				res.Started++
				runs = append(runs, run)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Every workflow is started before any result is waited for, as the
	// service's dispatcher starts one per event without waiting.
	sem := make(chan struct{}, 64)
	for _, run := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := run.Get(ctx, nil)
			record(err == nil, err)
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start).Round(time.Millisecond).String()
	_ = json.NewEncoder(os.Stdout).Encode(res)
	if res.Failed > 0 {
		return 1
	}
	return 0
}
