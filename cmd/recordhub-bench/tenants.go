package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
)

// prodTenant is one tenant's fixture and where its deliveries arrive.
type prodTenant struct {
	f   fixture
	rcv *receiver
}

// createTenant runs `recordhub tenant create NAME --json` with the
// service's environment and returns the new tenant's admin key.
func createTenant(ctx context.Context, bin string, env map[string]string, name string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "tenant", "create", name, "--json")
	cmd.Env = serviceEnv(env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("recordhub tenant create: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var t struct {
		AdminKey string `json:"admin_key"`
	}
	if err := json.Unmarshal(out, &t); err != nil || t.AdminKey == "" {
		return "", fmt.Errorf("recordhub tenant create printed %q", out)
	}
	return t.AdminKey, nil
}

// newProdTenant gives a tenant a key without a rate limit, a module and an
// endpoint subscribed to record_created on a receiver of its own.
func newProdTenant(ctx context.Context, api *service, adminKey string) (prodTenant, error) {
	var t prodTenant
	var err error
	if t.f, err = setUp(ctx, api, adminKey); err != nil {
		return t, err
	}
	if t.rcv, err = startReceiver(); err != nil {
		return t, err
	}
	if _, err = subscribe(ctx, api, adminKey, map[string]any{"url": t.rcv.url("/hook"), "events": []string{"record_created"}}); err != nil {
		t.rcv.srv.Close()
		return t, err
	}
	return t, nil
}

// subscribe creates a webhook endpoint as body describes it and returns
// its id.
func subscribe(ctx context.Context, api *service, adminKey string, body map[string]any) (string, error) {
	var ep struct {
		ID string `json:"id"`
	}
	if err := api.call(ctx, "POST", "/api/admin/webhook-endpoints", adminKey, body, &ep); err != nil {
		return "", fmt.Errorf("create webhook endpoint: %w", err)
	}
	return ep.ID, nil
}

// warmUp sends n deliveries through the whole path before measuring.
func (t prodTenant) warmUp(ctx context.Context, api *service, n int) error {
	ids, err := createMany(ctx, api, t.f, n, 1)
	if err != nil {
		return err
	}
	waitProgress(ctx, len(ids), prodStall, func() int { return len(t.rcv.arrivals(ids)) })
	if got := len(t.rcv.arrivals(ids)); got < len(ids) {
		return fmt.Errorf("%d of %d deliveries arrived within %s", got, len(ids), prodStall)
	}
	return nil
}
