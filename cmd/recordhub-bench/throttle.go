package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// The throttle mode: what an endpoint's throttle costs when it never binds,
// and how close to its limit a backlog drains when it does.
const (
	throttleFree    = 10000 // per second: a rate_limit the run never reaches
	throttleLimit   = 20    // per second: the binding one
	throttleBacklog = 2000
)

// runThrottle measures, on `serve` with its embedded Temporal server (and
// Redis when -throttle-redis is set), one after another on one endpoint:
// deliveries/s and machine CPU per delivery without a throttle and with
// a rate_limit of 10,000/s, which the run never reaches; then the drain
// rate of a 2,000-event backlog at rate_limit 20/s against the limit.
func (b *bench) runThrottle(ctx context.Context, root string) error {
	fmt.Fprintf(b.out, "building ./cmd/recordhub ...\n")
	bin, err := buildService(ctx, root, b.work, "recordhub")
	if err != nil {
		return err
	}
	e, err := b.startEmbeddedWith(ctx, bin, "throttle", map[string]string{"REDIS_URL": b.o.throttleRedis})
	if err != nil {
		return err
	}
	svc := e.service
	defer stopService(b.out, "throttle: recordhub", svc)
	f, err := setUp(ctx, svc, e.adminKey)
	if err != nil {
		return err
	}
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.Close()
	epID, err := subscribe(ctx, svc, e.adminKey, client.EndpointInput{URL: rcv.URL("/hook"), Events: []string{"record_created"}})
	if err != nil {
		return err
	}
	t := prodTenant{f: f, rcv: rcv}
	if err := t.warmUp(ctx, svc, 20); err != nil {
		return fmt.Errorf("warm-up: %w; the service's log is %s", err, svc.logPath)
	}
	admin := svc.as(e.adminKey)
	setLimit := func(perSecond int) error {
		u := client.EndpointUpdate{RateLimit: &client.Nullable[client.RateLimit]{Null: perSecond == 0, Value: client.RateLimit{PerSecond: perSecond}}}
		_, err := admin.UpdateEndpoint(ctx, epID, u)
		return err
	}
	var runs []throughput
	for _, limit := range []int{0, throttleFree, 0, throttleFree} {
		if err := setLimit(limit); err != nil {
			return err
		}
		tp, _, err := b.serviceThroughput(ctx, svc, t)
		if err != nil {
			return err
		}
		tp.label = "no throttle"
		if limit > 0 {
			tp.label = fmt.Sprintf("rate_limit %d/s", limit)
		}
		runs = append(runs, tp)
	}
	if err := setLimit(throttleLimit); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "throttle: %d records at once to an endpoint throttled at %d/s ...\n", throttleBacklog, throttleLimit)
	ids, err := createMany(ctx, svc, f, throttleBacklog, webhookCreators)
	if err != nil {
		return err
	}
	waitProgress(ctx, len(ids), 30*time.Second, func() int { return len(rcv.arrivals(ids)) })
	arr := times(rcv.arrivals(ids))
	slices.SortFunc(arr, time.Time.Compare)
	most, j := 0, 0
	for i := range arr {
		for arr[i].Sub(arr[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	drain := rate(len(arr), span(arr))

	fmt.Fprintf(b.out, "\nthrottle, one endpoint, %d deliveries a run, runs one after another:\n", b.o.webhookN)
	for _, r := range runs {
		fmt.Fprintf(b.out, "  %-22s %7.1f/s  %s CPU per delivery\n", r.label, r.rate(), ms(r.cpuPer()))
	}
	fmt.Fprintf(b.out, "  backlog of %d at rate_limit %d/s: %d arrived in %s, %.2f/s (%.3f× the limit), busiest second %d\n",
		throttleBacklog, throttleLimit, len(arr), span(arr).Round(time.Millisecond), drain, drain/throttleLimit, most)
	return nil
}
