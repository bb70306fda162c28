package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// createRecord POSTs one record and returns its id.
func createRecord(ctx context.Context, svc *service, f fixture) (string, error) {
	var rec struct {
		ID string `json:"id"`
	}
	var body map[string]any
	_ = json.Unmarshal([]byte(recordBody), &body)
	if err := svc.call(ctx, "POST", "/api/modules/"+f.writeModule+"/records", f.key, body, &rec); err != nil {
		return "", err
	}
	if rec.ID == "" {
		return "", errors.New("create record: no id in the answer")
	}
	return rec.ID, nil
}

// createMany creates n records, conc at a time, and returns their ids.
func createMany(ctx context.Context, api *service, f fixture, n, conc int) ([]string, error) {
	var (
		mu   sync.Mutex
		ids  = make([]string, 0, n)
		errs []error
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				id, err := createRecord(ctx, api, f)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids = append(ids, id)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return ids, fmt.Errorf("%d of %d creates failed, the first: %w", len(errs), n, errs[0])
	}
	return ids, nil
}

// prodSent is one create and when its response came.
type prodSent struct {
	id string
	at time.Time
}

// createPaced creates n records, one every interval, the first at once.
func createPaced(ctx context.Context, api *service, f fixture, n int, every time.Duration) ([]prodSent, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var sent []prodSent
	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
				return sent, ctx.Err()
			case <-tick.C:
			}
		}
		id, err := createRecord(ctx, api, f)
		if err != nil {
			return sent, err
		}
		sent = append(sent, prodSent{id, time.Now()})
	}
	return sent, nil
}
