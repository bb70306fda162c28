package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// TestKeys: an admin creates, lists, changes, rotates, revokes a key and
// reads its usage; the rotated-out and the revoked secrets stop working.
func TestKeys(t *testing.T) {
	ctx := context.Background()
	c := newAPI(t)
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	k, err := c.CreateKey(ctx, client.KeyInput{Name: "reader", Permissions: map[string][]string{"*": {"read"}}, ExpiresAt: &expires})
	if err != nil {
		t.Fatal(err)
	}
	if k.Secret == "" || k.ExpiresAt == nil || !k.ExpiresAt.Equal(expires) {
		t.Errorf("created %+v, want a secret and the expiry %v", k, expires)
	}
	page, err := c.ListKeys(ctx, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 2 || len(page.Data) != 1 || page.Data[0].ID != k.ID || page.Data[0].Secret != "" {
		t.Errorf("page 1 of 1: %+v, want the new key of 2, without its secret", page)
	}

	name := "renamed"
	up, err := c.UpdateKey(ctx, k.ID, client.KeyUpdate{Name: &name, ClearExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	if up.Name != name || up.ExpiresAt != nil || len(up.Permissions["*"]) != 1 {
		t.Errorf("changed %+v, want the new name, no expiry, the permissions kept", up)
	}
	if got, err := c.GetKey(ctx, k.ID); err != nil || got.Name != name {
		t.Errorf("read back %+v, %v; want %q", got, err, name)
	}

	rot, err := c.RotateKey(ctx, k.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rot.Secret == "" || rot.Secret == k.Secret {
		t.Errorf("rotated secret %q, want a new one", rot.Secret)
	}
	var e *client.Error
	if _, err := c.WithKey(k.Secret).KeyModules(ctx); !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Errorf("the rotated-out secret: %v, want a 401", err)
	}
	if _, err := c.WithKey(rot.Secret).KeyModules(ctx); err != nil {
		t.Errorf("the new secret: %v", err)
	}

	rev, err := c.RevokeKey(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rev.RevokedAt == nil {
		t.Errorf("revoked %+v, want revoked_at", rev)
	}
	if _, err := c.WithKey(rot.Secret).KeyModules(ctx); !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Errorf("a revoked key: %v, want a 401", err)
	}

	u, err := c.KeyUsage(ctx, k.ID, client.UsageQuery{Granularity: client.ByDay, From: time.Now().Add(-48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if u.Summary.Granularity != client.ByDay || u.Summary.From.IsZero() || !u.Summary.To.After(u.Summary.From) {
		t.Errorf("usage summary %+v, want a day range", u.Summary)
	}
}
