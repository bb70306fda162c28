package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/api/client"
)

// TestModules: an admin creates, lists, reads, changes and deletes a
// module; a key sees the modules it may use, with its permissions.
func TestModules(t *testing.T) {
	ctx := context.Background()
	c := newAPI(t)
	m, err := c.CreateModule(ctx, client.ModuleInput{Slug: "orders", Name: "Orders", Fields: []client.Field{
		{Name: "state", Type: "status", States: []string{"new", "paid"}, Initial: "new", Transitions: map[string][]string{"new": {"paid"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID == "" || m.CreatedAt.IsZero() || m.Fields[0].Initial != "new" || len(m.Fields[0].Transitions["new"]) != 1 {
		t.Errorf("created %+v, want an id, a creation time and the status field as sent", m)
	}
	list, err := c.ListModules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != m.ID {
		t.Errorf("listed %+v, want the one module", list)
	}
	name := "Paid orders"
	fields := []client.Field{{Name: "state", Type: "string"}, {Name: "total", Type: "number", Required: true}}
	up, err := c.UpdateModule(ctx, m.ID, client.ModuleUpdate{Name: &name, Fields: &fields})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetModule(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != name || got.Slug != "orders" || up.Name != name {
		t.Errorf("read back %+v after a change of the name only, want %q and the slug kept", got, name)
	}
	if d := cmp.Diff(got.Fields, fields); d != "" {
		t.Errorf("fields (-got +want):\n%s", d)
	}

	key, err := c.CreateKey(ctx, client.KeyInput{Permissions: map[string][]string{m.ID: {"read"}}})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := c.WithKey(key.Secret).KeyModules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(mine) != 1 || mine[0].ID != m.ID || !cmp.Equal(mine[0].Permissions, []string{"read"}) {
		t.Errorf("a reader's modules %+v, want the module with read", mine)
	}

	if err := c.DeleteModule(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	var e *client.Error
	if _, err := c.GetModule(ctx, m.ID); !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Errorf("read after delete: %v, want a 404", err)
	}
}
