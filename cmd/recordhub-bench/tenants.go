package main

import (
	"context"
	"fmt"

	"github.com/recordhub/recordhub/api/client"
)

// prodTenant is one tenant's fixture and where its deliveries arrive.
type prodTenant struct {
	f   fixture
	rcv *receiver
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
	if _, err = subscribe(ctx, api, adminKey, client.EndpointInput{URL: t.rcv.URL("/hook"), Events: []string{"record_created"}}); err != nil {
		t.rcv.Close()
		return t, err
	}
	return t, nil
}

// subscribe creates a webhook endpoint as in describes it and returns its
// id.
func subscribe(ctx context.Context, api *service, adminKey string, in client.EndpointInput) (string, error) {
	ep, err := api.as(adminKey).CreateEndpoint(ctx, in)
	if err != nil {
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
