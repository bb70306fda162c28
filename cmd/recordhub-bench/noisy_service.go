package main

import (
	"context"
	"fmt"
)

// noisyService is the service one noisy run meets, in either shape.
type noisyService struct {
	api      *service
	ws       []*service        // the processes running the dispatcher, for the outbox's gauges
	adminKey string            // the bootstrap tenant's: tenant A's
	env      map[string]string // what it was started with, for `recordhub tenant create`
	logs     string            // where its logs are, for an error
	stop     func()
}

// startNoisyService starts the shape -noisy-production chooses.
func (b *bench) startNoisyService(ctx context.Context, bin, tag string) (*noisyService, error) {
	if b.o.noisyProduction {
		return b.startNoisyProduction(ctx, bin, tag)
	}
	e, err := b.startEmbedded(ctx, bin, tag)
	if err != nil {
		return nil, err
	}
	return &noisyService{api: e.service, ws: []*service{e.service}, adminKey: e.adminKey, env: e.env, logs: e.logPath,
		stop: func() { stopService(b.out, tag, e.service) }}, nil
}

// startNoisyProduction starts the production shape on its own Temporal
// server: after `hanging`, hundreds of A's workflows keep retrying against
// a task queue no worker polls any more, and the next run must not meet
// their timers and backlog. The server's databases, like recordhub's, are
// fresh for each run and dropped after it.
func (b *bench) startNoisyProduction(ctx context.Context, bin, tag string) (_ *noisyService, err error) {
	ts, stopTemporal, err := b.startTemporal(ctx, tag, tag+"-temporal.log")
	if err != nil {
		return nil, err
	}
	st, err := b.startProdServices(ctx, bin, ts, tag, 1)
	if err != nil {
		stopTemporal()
		return nil, err
	}
	return &noisyService{api: st.api, ws: st.ws, adminKey: st.adminKey, env: st.env, logs: fmt.Sprintf("%s/%s-{api,worker1,temporal}.log", b.work, tag),
		stop: func() {
			st.close()
			stopTemporal()
		}}, nil
}
