package client_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
)

// TestAdminFlow: an admin makes a key, a module and an endpoint; the key
// writes and reads records, as the bench and the chaos harness do.
func TestAdminFlow(t *testing.T) {
	ctx := context.Background()
	admin := newAPI(t)
	key, err := admin.CreateKey(ctx, client.KeyInput{Name: "writer", Permissions: map[string][]string{"*": {"read", "write"}}})
	if err != nil {
		t.Fatal(err)
	}
	if key.Secret == "" || key.ID == "" {
		t.Fatalf("created key %+v: want an id and its secret", key)
	}
	m, err := admin.CreateModule(ctx, client.ModuleInput{Slug: "notes", Name: "Notes", Fields: []client.Field{{Name: "title", Type: "string", Required: true}}})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := admin.CreateEndpoint(ctx, client.EndpointInput{URL: "https://hooks.example.com/in", Events: []string{"record_created"}, ModuleIDs: []string{m.ID}})
	if err != nil {
		t.Fatal(err)
	}
	ordering := "record"
	up, err := admin.UpdateEndpoint(ctx, ep.ID, client.EndpointUpdate{Ordering: &ordering})
	if err != nil {
		t.Fatal(err)
	}
	if up.ID != ep.ID || up.Ordering != "record" || len(up.Raw) == 0 {
		t.Errorf("updated endpoint %+v, want %s with ordering record and its answer", up, ep.ID)
	}

	writer := admin.WithKey(key.Secret)
	rec, err := writer.CreateRecord(ctx, m.ID, client.RecordInput{Fields: map[string]any{"title": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := writer.GetRecord(ctx, m.ID, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got.Fields, map[string]any{"title": "hello"}); d != "" || got.Version != 1 {
		t.Errorf("record read back: version %d, fields (-got +want)\n%s", got.Version, d)
	}
	page, err := writer.ListRecords(ctx, m.ID, 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 1 || len(page.Data) != 1 || page.Data[0].ID != rec.ID {
		t.Errorf("page 1: %+v, want the one record", page)
	}
}
