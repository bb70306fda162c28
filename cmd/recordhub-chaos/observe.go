package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/workflows"
)

// quiet is the state the harness waits for after the load: no event left in
// the outbox, no attempt row in flight, no delivery workflow running, and
// the receiver silent for a while.
type quiet struct {
	pending, inFlight, running int64
	receiverQuiet              time.Duration
}

func (q quiet) reached(receiverQuiet time.Duration) bool {
	return q.pending == 0 && q.inFlight == 0 && q.running == 0 && q.receiverQuiet >= receiverQuiet
}

func (q quiet) String() string {
	receiver := "receiver quiet for " + q.receiverQuiet.Round(100*time.Millisecond).String()
	if q.receiverQuiet == neverReceived {
		receiver = "no request received"
	}
	return fmt.Sprintf("%d events pending in the outbox, %d attempt rows in flight, %d delivery workflows running, %s",
		q.pending, q.inFlight, q.running, receiver)
}

// waitQuiet polls until the stack is quiet or limit passes, and returns the
// last state seen.
func (s *stack) waitQuiet(ctx context.Context, tenants []tenant, limit time.Duration, logf logFunc) (quiet, error) {
	const receiverQuiet = 5 * time.Second
	c, err := client.DialContext(ctx, client.Options{
		HostPort: s.temporal.Address(), Namespace: s.temporal.Namespace(),
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		return quiet{}, fmt.Errorf("dial Temporal: %w", err)
	}
	defer c.Close()
	deadline := time.Now().Add(limit)
	lastLog := time.Now()
	for {
		q, err := s.probe(ctx, c, tenants)
		if err == nil && q.reached(receiverQuiet) {
			return q, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return q, err
			}
			return q, nil
		}
		if time.Since(lastLog) >= 15*time.Second {
			if err != nil {
				logf("waiting for quiet: %v", err)
			} else {
				logf("waiting for quiet: %s", q)
			}
			lastLog = time.Now()
		}
		if err := sleep(ctx, time.Second); err != nil {
			return q, err
		}
	}
}

// probe reads the state once.
func (s *stack) probe(ctx context.Context, c client.Client, tenants []tenant) (quiet, error) {
	q := quiet{receiverQuiet: s.receiver.quietFor()}
	db, err := pgx.Connect(ctx, s.pg.URL("recordhub"))
	if err != nil {
		return q, err
	}
	defer db.Close(ctx)
	modules, endpoints := ids(tenants)
	err = db.QueryRow(ctx, `SELECT count(*) FROM events WHERE dispatched_at IS NULL AND module_id = ANY($1)`, modules).Scan(&q.pending)
	if err != nil {
		return q, fmt.Errorf("count pending events: %w", err)
	}
	err = db.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE error = $1 AND endpoint_id = ANY($2)`, models.DeliveryErrInFlight, endpoints).Scan(&q.inFlight)
	if err != nil {
		return q, fmt.Errorf("count rows in flight: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.CountWorkflow(cctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: s.temporal.Namespace(),
		Query: fmt.Sprintf("WorkflowType = '%s' AND TaskQueue = '%s' AND ExecutionStatus = 'Running'",
			workflows.DeliveryWorkflowName, taskQueue),
	})
	if err != nil {
		return q, fmt.Errorf("count running delivery workflows: %w", err)
	}
	q.running = resp.GetCount()
	return q, nil
}

// observe reads what the database holds and joins it to what the load and
// the receiver saw.
func (s *stack) observe(ctx context.Context, tenants []tenant, writes []write) (observations, error) {
	o := observations{Writes: writes, Records: map[string]int64{}, Requests: s.receiver.seen()}
	db, err := pgx.Connect(ctx, s.pg.URL("recordhub"))
	if err != nil {
		return o, err
	}
	defer db.Close(ctx)
	modules, endpoints := ids(tenants)

	// The write number tells which write made each record: a write
	// without a 201 may have been applied all the same, and a write
	// applied twice leaves two records with one number.
	rows, err := db.Query(ctx, `SELECT id, COALESCE((custom_data->>'write')::bigint, 0) FROM records WHERE module_id = ANY($1)`, modules)
	if err != nil {
		return o, fmt.Errorf("read records: %w", err)
	}
	var id string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		o.Records[id] = n
		return nil
	}); err != nil {
		return o, fmt.Errorf("read records: %w", err)
	}

	rows, err = db.Query(ctx, `SELECT id, record_id, occurred_at FROM events WHERE module_id = ANY($1) AND type = 'record_created'`, modules)
	if err != nil {
		return o, fmt.Errorf("read events: %w", err)
	}
	o.Events, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (event, error) {
		var e event
		return e, r.Scan(&e.ID, &e.RecordID, &e.OccurredAt)
	})
	if err != nil {
		return o, fmt.Errorf("read events: %w", err)
	}

	rows, err = db.Query(ctx, `SELECT event_id, attempt, error, succeeded FROM webhook_deliveries WHERE endpoint_id = ANY($1)`, endpoints)
	if err != nil {
		return o, fmt.Errorf("read attempt rows: %w", err)
	}
	o.Rows, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (attemptRow, error) {
		var a attemptRow
		return a, r.Scan(&a.EventID, &a.Attempt, &a.Error, &a.Succeeded)
	})
	if err != nil {
		return o, fmt.Errorf("read attempt rows: %w", err)
	}
	return o, nil
}

func ids(tenants []tenant) (modules, endpoints []string) {
	for _, t := range tenants {
		modules = append(modules, t.moduleID)
		endpoints = append(endpoints, t.endpoint)
	}
	return modules, endpoints
}
