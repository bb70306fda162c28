package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// benchRecord is recordBody, as the client sends it.
var benchRecord = func() client.RecordInput {
	var in client.RecordInput
	if err := json.Unmarshal([]byte(recordBody), &in); err != nil {
		panic(err)
	}
	return in
}()

// createRecord POSTs one record and returns its id.
func createRecord(ctx context.Context, svc *service, f fixture) (string, error) {
	rec, err := svc.as(f.key).CreateRecord(ctx, f.writeModule, benchRecord)
	if err != nil {
		return "", err
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
