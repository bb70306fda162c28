package main

import (
	"context"
	"fmt"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/cmd/internal/harness"
)

// setUpTenant gives the tenant of adminKey a key without a practical rate
// limit, a module and an endpoint on the receiver for record_created.
func setUpTenant(ctx context.Context, api *service, name, adminKey, receiverURL string) (tenant, error) {
	t := tenant{name: name}
	admin := api.as(adminKey)
	var err error
	if t.key, err = harness.UnlimitedKey(ctx, admin, "chaos", "read", "write"); err != nil {
		return t, fmt.Errorf("tenant %s: %w", name, err)
	}
	mod, err := admin.CreateModule(ctx, client.ModuleInput{
		Slug: "chaos", Name: "chaos", Fields: []client.Field{{Name: "title", Type: "string", Required: true}},
	})
	if err != nil {
		return t, fmt.Errorf("tenant %s: create module: %w", name, err)
	}
	t.moduleID = mod.ID
	ep, err := admin.CreateEndpoint(ctx, client.EndpointInput{
		URL: receiverURL + "/" + name, Events: []string{"record_created"}, ModuleIDs: []string{t.moduleID},
	})
	if err != nil {
		return t, fmt.Errorf("tenant %s: create endpoint: %w", name, err)
	}
	t.endpoint = ep.ID
	return t, nil
}
