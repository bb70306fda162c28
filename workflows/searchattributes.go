package workflows

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// The search attributes every delivery workflow carries, so that operators
// can filter deliveries in the Temporal UI (`RecordhubEndpoint = "whe_…"`).
// All are Keyword: exact match, and SQLite visibility has 10 Keyword slots
// per namespace, of which these take five.
var (
	TenantAttr    = temporal.NewSearchAttributeKeyKeyword("RecordhubTenant")
	EndpointAttr  = temporal.NewSearchAttributeKeyKeyword("RecordhubEndpoint")
	ModuleAttr    = temporal.NewSearchAttributeKeyKeyword("RecordhubModule")
	RecordAttr    = temporal.NewSearchAttributeKeyKeyword("RecordhubRecord")
	EventTypeAttr = temporal.NewSearchAttributeKeyKeyword("RecordhubEventType")
)

func searchAttributeKeys() []temporal.SearchAttributeKeyKeyword {
	return []temporal.SearchAttributeKeyKeyword{TenantAttr, EndpointAttr, ModuleAttr, RecordAttr, EventTypeAttr}
}

// searchAttributes are the attributes a delivery starts with.
func searchAttributes(in DeliveryInput) temporal.SearchAttributes {
	var u []temporal.SearchAttributeUpdate
	for _, a := range []struct {
		key temporal.SearchAttributeKeyKeyword
		v   string
	}{{TenantAttr, in.TenantID}, {EndpointAttr, in.EndpointID}, {ModuleAttr, in.ModuleID}, {RecordAttr, in.RecordID}, {EventTypeAttr, in.EventType}} {
		if a.v != "" {
			u = append(u, a.key.ValueSet(a.v))
		}
	}
	return temporal.NewSearchAttributes(u...)
}

// RegisterSearchAttributes makes sure the namespace knows the delivery
// search attributes; run it at every start, before the dispatcher starts
// workflows. A server keeps attributes across restarts, but one created
// from an existing database (the embedded server) or by someone else (a
// real cluster) may lack them. Only the missing ones are added, so a
// cluster whose operators added them already needs no operator rights,
// and a second process adding them at the same moment is not an error.
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	ops := c.OperatorService()
	missing, err := missingSearchAttributes(ctx, ops, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		// Another process may have won a race for the same slots: what
		// matters is that the attributes exist now.
		if again, lerr := missingSearchAttributes(ctx, ops, namespace); lerr != nil || len(again) > 0 {
			return fmt.Errorf("add search attributes %v to namespace %s: %w", slices.Sorted(maps.Keys(missing)), namespace, err)
		}
	}
	return awaitSearchAttributes(ctx, c, namespace)
}

// searchAttributesUsable bounds the wait for attributes just added to be
// usable.
const searchAttributesUsable = 30 * time.Second

// awaitSearchAttributes returns once the namespace takes a query on every
// delivery attribute. An attribute just added is stored at once, but the
// frontend maps it from a namespace cache refreshed every few seconds:
// until then a workflow started with it is refused ("no mapping defined
// for search attribute"), as a test saw.
func awaitSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	var conds []string
	for _, k := range searchAttributeKeys() {
		conds = append(conds, k.GetName()+` = ""`)
	}
	req := &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: strings.Join(conds, " AND ")}
	ctx, cancel := context.WithTimeout(ctx, searchAttributesUsable)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := c.WorkflowService().CountWorkflowExecutions(ctx, req)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search attributes of namespace %s not usable after %s: %w", namespace, searchAttributesUsable, err)
		case <-tick.C:
		}
	}
}

// missingSearchAttributes returns the delivery attributes the namespace
// lacks, and fails when one exists with another type.
func missingSearchAttributes(ctx context.Context, ops operatorservice.OperatorServiceClient, namespace string) (map[string]enumspb.IndexedValueType, error) {
	resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, k := range searchAttributeKeys() {
		name, want := k.GetName(), k.GetValueType()
		have, ok := resp.GetCustomAttributes()[name]
		if !ok {
			missing[name] = want
			continue
		}
		if have != want {
			return nil, fmt.Errorf("search attribute %s of namespace %s has type %s, recordhub needs %s: remove it or use another namespace", name, namespace, have, want)
		}
	}
	return missing, nil
}
