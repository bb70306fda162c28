package main

import (
	"context"
	"fmt"

	"github.com/recordhub/recordhub/models"
)

// Endpoints' throttles (rate_limit, max_in_flight) are held in Redis when
// REDIS_URL is set, across every worker that shares it. Without Redis
// they are held in the process: exact for serve --role all, where one
// process sends every request. Split roles without Redis cannot hold them:
// a worker refuses to start while any endpoint has one, and the API
// refuses to set one.

// throttleUnheld is why the API refuses to set a throttle, or "" when it
// may: an API process of a split deployment without Redis.
func (c Config) throttleUnheld() string {
	if c.RedisURL != "" || c.Role == RoleAll {
		return ""
	}
	return "needs REDIS_URL: with --role api and worker in separate processes only Redis holds a throttle across the workers"
}

// checkThrottlesHeld refuses to start a worker of a split deployment
// without Redis while any endpoint has a throttle that it could not hold.
func checkThrottlesHeld(ctx context.Context, cfg Config, store *models.Store) error {
	if cfg.RedisURL != "" || cfg.Role == RoleAll {
		return nil
	}
	n, err := store.CountThrottledEndpoints(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%d webhook endpoints have a throttle (rate_limit or max_in_flight), which workers without REDIS_URL cannot hold together: set REDIS_URL, the same Redis for every worker, or remove the throttles", n)
	}
	return nil
}
