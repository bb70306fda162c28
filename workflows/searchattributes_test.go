package workflows

import (
	"context"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
)

// fakeOperator keeps a namespace's custom search attributes.
type fakeOperator struct {
	operatorservice.OperatorServiceClient
	attrs map[string]enumspb.IndexedValueType
	adds  []map[string]enumspb.IndexedValueType
	// addErr is what AddSearchAttributes answers; added says whether the
	// attributes were added all the same (another process won a race).
	addErr error
	added  bool
	// stale is how many queries on the attributes are refused after they
	// are added (the frontend's namespace cache not yet refreshed);
	// queries counts the queries.
	stale   int
	queries int
}

func (f *fakeOperator) ListSearchAttributes(_ context.Context, req *operatorservice.ListSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	if req.GetNamespace() != "ns" {
		return nil, serviceerror.NewNamespaceNotFound(req.GetNamespace())
	}
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: maps.Clone(f.attrs)}, nil
}

func (f *fakeOperator) AddSearchAttributes(_ context.Context, req *operatorservice.AddSearchAttributesRequest, _ ...grpc.CallOption) (*operatorservice.AddSearchAttributesResponse, error) {
	if req.GetNamespace() != "ns" {
		return nil, serviceerror.NewNamespaceNotFound(req.GetNamespace())
	}
	f.adds = append(f.adds, req.GetSearchAttributes())
	if f.addErr == nil || f.added {
		maps.Copy(f.attrs, req.GetSearchAttributes())
	}
	return &operatorservice.AddSearchAttributesResponse{}, f.addErr
}

// fakeWorkflows answers the visibility queries of the operator's
// namespace: refused while an attribute is missing or stale.
type fakeWorkflows struct {
	workflowservice.WorkflowServiceClient
	ops *fakeOperator
}

func (f fakeWorkflows) CountWorkflowExecutions(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest, _ ...grpc.CallOption) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	f.ops.queries++
	for _, k := range searchAttributeKeys() {
		if _, ok := f.ops.attrs[k.GetName()]; !ok || f.ops.stale > 0 {
			f.ops.stale--
			return nil, serviceerror.NewInvalidArgument("Namespace ns has no mapping defined for search attribute " + k.GetName())
		}
	}
	return &workflowservice.CountWorkflowExecutionsResponse{}, nil
}

type fakeClient struct {
	client.Client
	ops *fakeOperator
}

func (c fakeClient) OperatorService() operatorservice.OperatorServiceClient { return c.ops }

func (c fakeClient) WorkflowService() workflowservice.WorkflowServiceClient {
	return fakeWorkflows{ops: c.ops}
}

func TestRegisterSearchAttributes(t *testing.T) {
	const kw = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	all := map[string]enumspb.IndexedValueType{
		"RecordhubTenant": kw, "RecordhubEndpoint": kw, "RecordhubModule": kw, "RecordhubRecord": kw, "RecordhubEventType": kw,
	}
	for _, c := range []struct {
		name     string
		existing map[string]enumspb.IndexedValueType
		addErr   error
		added    bool
		stale    int
		wantAdds []map[string]enumspb.IndexedValueType
		wantErr  bool
	}{
		{name: "none yet", existing: map[string]enumspb.IndexedValueType{"Other": kw}, wantAdds: []map[string]enumspb.IndexedValueType{all}},
		{
			name: "added, usable only once the namespace cache has them", existing: map[string]enumspb.IndexedValueType{}, stale: 3,
			wantAdds: []map[string]enumspb.IndexedValueType{all},
		},
		{name: "all there: nothing to add, no operator rights needed", existing: maps.Clone(all)},
		{
			name:     "some there",
			existing: map[string]enumspb.IndexedValueType{"RecordhubTenant": kw, "RecordhubEndpoint": kw, "RecordhubModule": kw},
			wantAdds: []map[string]enumspb.IndexedValueType{{"RecordhubRecord": kw, "RecordhubEventType": kw}},
		},
		{
			name:     "an old server's already exists",
			existing: map[string]enumspb.IndexedValueType{}, addErr: serviceerror.NewAlreadyExists("search attribute RecordhubTenant already exists"), added: true,
			wantAdds: []map[string]enumspb.IndexedValueType{all},
		},
		{
			name:     "a race lost to another process",
			existing: map[string]enumspb.IndexedValueType{}, addErr: serviceerror.NewUnavailable("Generated search attributes mapping unavailable."), added: true,
			wantAdds: []map[string]enumspb.IndexedValueType{all},
		},
		{
			name:     "refused",
			existing: map[string]enumspb.IndexedValueType{}, addErr: serviceerror.NewInvalidArgument("Unable to create search attributes: cannot have more than 10 search attribute of type Keyword."),
			wantAdds: []map[string]enumspb.IndexedValueType{all}, wantErr: true,
		},
		{
			name:     "same name, another type",
			existing: map[string]enumspb.IndexedValueType{"RecordhubRecord": enumspb.INDEXED_VALUE_TYPE_TEXT},
			wantErr:  true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			ops := &fakeOperator{attrs: c.existing, addErr: c.addErr, added: c.added, stale: c.stale}
			err := RegisterSearchAttributes(t.Context(), fakeClient{ops: ops}, "ns")
			if (err != nil) != c.wantErr {
				t.Fatalf("got error %v, want error: %v", err, c.wantErr)
			}
			if diff := cmp.Diff(c.wantAdds, ops.adds); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
			if c.stale > 0 && ops.queries != c.stale+1 {
				t.Errorf("%d queries, want %d: registration returned before the attributes were usable", ops.queries, c.stale+1)
			}
			if err == nil {
				for name, typ := range all {
					if ops.attrs[name] != typ {
						t.Errorf("%s is %v after registration", name, ops.attrs[name])
					}
				}
			}
		})
	}
	// Registering twice is harmless.
	ops := &fakeOperator{attrs: map[string]enumspb.IndexedValueType{}}
	for range 2 {
		if err := RegisterSearchAttributes(t.Context(), fakeClient{ops: ops}, "ns"); err != nil {
			t.Fatal(err)
		}
	}
	if len(ops.adds) != 1 {
		t.Errorf("%d additions for two registrations, want 1", len(ops.adds))
	}
}
