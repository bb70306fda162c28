package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// The change feed mode (-changes): how long a committed change takes to
// reach the live readers of its module's change feed, with many of them
// on one tenant, and what an idle stream costs the service in memory.

// changesResult is one database's figures.
type changesResult struct {
	db                    string
	subscribers, sent     int
	samples, missing      int
	p50, p99, max         time.Duration
	idleStreams           int
	rssBefore, rssStreams int64
}

// runChanges builds the service and measures each database of -db.
func (b *bench) runChanges(ctx context.Context, root string) error {
	fmt.Fprintf(b.out, "building ./cmd/recordhub ...\n")
	bin, err := buildService(ctx, root, b.work, "recordhub")
	if err != nil {
		return err
	}
	var results []changesResult
	for _, db := range b.o.databases {
		r, err := b.changes(ctx, bin, db)
		var skip *skipError
		switch {
		case errors.As(err, &skip):
			fmt.Fprintf(b.out, "%s: skipped: %v\n", db, skip.err)
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", db, err)
		}
		results = append(results, r)
	}
	fmt.Fprintf(b.out, "\nchange feed, %d changes/s for %s, one tenant:\n", b.o.changesRate, b.o.changesFor)
	fmt.Fprintf(b.out, "%-9s %12s %10s %10s %10s %14s %18s\n", "database", "subscribers", "p50", "p99", "max", "missing", "RSS per idle stream")
	for _, r := range results {
		per := float64(r.rssStreams-r.rssBefore) / float64(max(r.idleStreams, 1)) / 1024
		fmt.Fprintf(b.out, "%-9s %12d %10s %10s %10s %8d of %d %12.1f KiB (%d streams, %s → %s)\n", r.db, r.subscribers, ms(r.p50), ms(r.p99), ms(r.max),
			r.missing, r.samples, per, r.idleStreams, mib(r.rssBefore), mib(r.rssStreams))
	}
	return nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// changes measures one database: the idle streams' memory first, on an
// idle service, then the latency under writes.
func (b *bench) changes(ctx context.Context, bin, db string) (changesResult, error) {
	r := changesResult{db: db, subscribers: b.o.changesSubscribers, idleStreams: b.o.changesIdle}
	// Streams have no timeout; each has a connection of its own.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	// The idle streams may still be closing when the subscribers open:
	// room for both under the key's bound. The writes are the bench's
	// load, not a client's to be limited.
	b.serviceEnv = map[string]string{
		"RECORDHUB_CHANGES_STREAMS_PER_KEY": fmt.Sprint(2 * (r.idleStreams + r.subscribers)),
		"RECORDHUB_DEFAULT_RATE_LIMIT":      "1000000",
	}
	defer func() { b.serviceEnv = nil }()
	st, err := b.startDatabase(ctx, bin, db)
	if err != nil {
		return r, err
	}
	defer st.close()
	svc := st.svc
	admin := svc.as(st.adminKey)
	m, err := admin.CreateModule(ctx, client.ModuleInput{Slug: "feed", Name: "Feed", Fields: []client.Field{{Name: "title", Type: "string"}}})
	if err != nil {
		return r, err
	}

	// Idle streams: RSS settled without them, then with them.
	fmt.Fprintf(b.out, "%s: RSS of %d idle streams ...\n", db, r.idleStreams)
	settle := 3 * time.Second
	if err := sleepCtx(ctx, settle); err != nil {
		return r, err
	}
	if r.rssBefore, err = readRSS(svc.cmd.Process.Pid); err != nil {
		return r, err
	}
	idleCtx, stopIdle := context.WithCancel(ctx)
	idle := make([]*feedReader, r.idleStreams)
	for i := range idle {
		if idle[i], err = openFeed(idleCtx, hc, svc, st.adminKey, m.ID, "latest"); err != nil {
			stopIdle()
			return r, fmt.Errorf("idle stream %d: %w", i, err)
		}
	}
	if err := sleepCtx(ctx, settle); err != nil {
		stopIdle()
		return r, err
	}
	r.rssStreams, err = readRSS(svc.cmd.Process.Pid)
	stopIdle()
	if err != nil {
		return r, err
	}

	// Latency: subscribers from the feed's end, then paced creates.
	end, err := admin.Changes(ctx, m.ID, client.ChangesQuery{After: client.Latest})
	if err != nil {
		return r, err
	}
	fmt.Fprintf(b.out, "%s: %d subscribers, %d changes/s for %s ...\n", db, r.subscribers, b.o.changesRate, b.o.changesFor)
	subCtx, stopSubs := context.WithCancel(ctx)
	defer stopSubs()
	subs := make([]*feedReader, r.subscribers)
	for i := range subs {
		if subs[i], err = openFeed(subCtx, hc, svc, st.adminKey, m.ID, end.NextCursor); err != nil {
			return r, fmt.Errorf("subscriber %d: %w", i, err)
		}
	}
	var (
		mu    sync.Mutex
		sent  = map[string]time.Time{}
		errs  []error
		wg    sync.WaitGroup
		n     = b.o.changesRate * int(b.o.changesFor/time.Second)
		tick  = time.NewTicker(time.Second / time.Duration(b.o.changesRate))
		title atomic.Int64
	)
	for range n {
		<-tick.C
		wg.Go(func() {
			rec, err := admin.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"title": fmt.Sprint(title.Add(1))}})
			at := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			sent[rec.ID] = at
		})
	}
	tick.Stop()
	wg.Wait()
	if len(errs) > 0 {
		return r, fmt.Errorf("%d creates failed, the first: %w", len(errs), errs[0])
	}
	r.sent = len(sent)
	waitFor(ctx, r.sent*len(subs), 30*time.Second, func() int {
		total := 0
		for _, s := range subs {
			total += s.count()
		}
		return total
	})
	var lat []time.Duration
	for _, s := range subs {
		got := s.arrivals()
		for id, at := range sent {
			r.samples++
			if t, ok := got[id]; ok {
				lat = append(lat, t.Sub(at))
			} else {
				r.missing++
			}
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.p50, r.p99, r.max = percentile(lat, 0.50), percentile(lat, 0.99), lat[len(lat)-1]
	}
	fmt.Fprintf(b.out, "%s: p50 %s, p99 %s, max %s, %d of %d missing\n", db, ms(r.p50), ms(r.p99), ms(r.max), r.missing, r.samples)
	return r, nil
}

// feedReader is one live reader of a change feed: when each record's
// first change reached it.
type feedReader struct {
	mu  sync.Mutex
	got map[string]time.Time
}

// openFeed opens a stream after the cursor and reads it in the background
// until ctx ends; it returns once the stream's headers came.
func openFeed(ctx context.Context, hc *http.Client, svc *service, key, moduleID, after string) (*feedReader, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, svc.url("/api/modules/"+moduleID+"/changes?after="+after), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, fmt.Errorf("stream answered %s", res.Status)
	}
	f := &feedReader{got: map[string]time.Time{}}
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		const marker = `"record":{"id":"`
		for sc.Scan() {
			line := sc.Text()
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			at := time.Now()
			_, rest, ok := strings.Cut(data, marker)
			if !ok {
				continue
			}
			id, _, _ := strings.Cut(rest, `"`)
			f.mu.Lock()
			if _, seen := f.got[id]; !seen {
				f.got[id] = at
			}
			f.mu.Unlock()
		}
	}()
	return f, nil
}

func (f *feedReader) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

func (f *feedReader) arrivals() map[string]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
