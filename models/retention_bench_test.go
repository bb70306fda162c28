package models_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// TestPurgeLatency measures the p99 of concurrent record creates without,
// then during, a purge of RECORDHUB_PURGE_BENCH_ROWS old access-log rows
// (the purge may at most double it), purged as the Purge activity does (1,000 rows a
// statement, 50 ms between). It runs only when that variable is set:
//
//	RECORDHUB_PURGE_BENCH_ROWS=1000000 go test ./models -run TestPurgeLatency -v -timeout 30m
func TestPurgeLatency(t *testing.T) {
	rows, _ := strconv.Atoi(os.Getenv("RECORDHUB_PURGE_BENCH_ROWS"))
	if rows <= 0 {
		t.Skip("set RECORDHUB_PURGE_BENCH_ROWS to measure creates during a purge")
	}
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := storetest.Open(t, d)
			out := newOutboxTenant(t, s, "bench")
			old := time.Now().UTC().Add(-60 * 24 * time.Hour)
			seedStart := time.Now()
			const chunk = 5000
			for i := 0; i < rows; i += chunk {
				logs := make([]models.AccessLog, 0, chunk)
				for j := i; j < min(i+chunk, rows); j++ {
					logs = append(logs, models.AccessLog{ID: models.NewID(models.PrefixAccessLog), TenantID: &out.id, Method: "GET",
						Path: "/api/modules", Route: "/api/modules", Status: 200, RequestID: "r", CreatedAt: old.Add(time.Duration(j) * time.Millisecond)})
				}
				if err := s.InsertAccessLogs(ctx, logs); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("seeded %d rows in %v", rows, time.Since(seedStart).Round(time.Millisecond))

			// creates runs 8 writers creating records until stop and
			// returns the p99 of their latencies.
			creates := func(stop <-chan struct{}) (p99 time.Duration, n int) {
				var (
					mu  sync.Mutex
					lat []time.Duration
					wg  sync.WaitGroup
				)
				for range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							select {
							case <-stop:
								return
							default:
							}
							start := time.Now()
							if _, err := s.CreateRecord(ctx, out.module, map[string]any{"title": "x"}, nil); err != nil {
								t.Error(err)
								return
							}
							mu.Lock()
							lat = append(lat, time.Since(start))
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				slices.Sort(lat)
				if len(lat) == 0 {
					return 0, 0
				}
				return lat[len(lat)*99/100], len(lat)
			}

			quiet := make(chan struct{})
			time.AfterFunc(5*time.Second, func() { close(quiet) })
			base, baseN := creates(quiet)

			purging := make(chan struct{})
			var (
				deleted  int64
				purgeDur time.Duration
			)
			go func() {
				defer close(purging)
				start := time.Now()
				for {
					n, err := s.Purge(ctx, models.PurgeAccessLogs, time.Now().Add(-30*24*time.Hour), 1000)
					if err != nil {
						t.Error(err)
						return
					}
					deleted += n
					if n < 1000 {
						purgeDur = time.Since(start)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			during, duringN := creates(purging)
			t.Logf("%s: create p99 %v (%d creates) without a purge, %v (%d creates) during the purge of %d rows (%v): %.2f×",
				d, base, baseN, during, duringN, deleted, purgeDur.Round(time.Millisecond), float64(during)/float64(base))
			if during > 2*base {
				t.Errorf("create p99 during the purge %v is more than twice %v", during, base)
			}
		})
	}
}
