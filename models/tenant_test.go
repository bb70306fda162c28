package models_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/recordhub/recordhub/models"
	"github.com/recordhub/recordhub/models/storetest"
)

// tenantRow is what the command line shows of a tenant.
type tenantRow struct {
	ID, Name string
	Created  time.Time
}

func TestListTenants(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		clock := storetest.NewClock()
		db := storetest.NewDB(t, d)
		s := db.Open(t, models.Options{Now: clock.Now})
		ctx := context.Background()

		got, err := s.ListTenants(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("empty store lists %v", tenantRows(got))
		}
		var want []tenantRow
		for i, name := range []string{"zeta", "acme", "zeta"} {
			tn, _, _, err := s.CreateTenant(ctx, fmt.Sprint(name, i), 600)
			if err != nil {
				t.Fatal(err)
			}
			db.NameTenant(t, tn.ID, name) // two zetas, as an older database may hold
			want = append(want, tenantRow{tn.ID, name, clock.Now().UTC().Truncate(time.Millisecond)})
			clock.Advance(time.Minute)
		}
		if err := s.SetTenantAIKey(ctx, want[0].ID, "sk-secret"); err != nil {
			t.Fatal(err)
		}
		got, err = s.ListTenants(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tenantRows(got), want); diff != "" {
			t.Errorf("tenants, oldest first (-got +want):\n%s", diff)
		}
		for _, tn := range got {
			if tn.AIKey != nil {
				t.Errorf("tenant %s listed with its sealed AI key", tn.ID)
			}
		}
	})
}

func TestCreateTenant(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		s := storetest.Open(t, d)
		ctx := context.Background()

		first, _, secret, err := s.CreateTenant(ctx, "acme", 600)
		if err != nil {
			t.Fatal(err)
		}
		if k, err := s.Authenticate(ctx, secret); err != nil || k.TenantID != first.ID || !k.Admin {
			t.Fatalf("the first admin key: %+v, %v", k, err)
		}
		_, _, _, err = s.CreateTenant(ctx, "acme", 600)
		if got := kindOf(err); got != models.KindConflict || !strings.Contains(err.Error(), first.ID) {
			t.Errorf("a second acme: %v (%s), want a conflict naming %s", err, got, first.ID)
		}
		if _, _, _, err := s.CreateTenant(ctx, "Acme Ltd", 600); err != nil {
			t.Errorf("another name: %v", err)
		}
		if _, _, _, err := s.CreateTenant(ctx, "", 600); kindOf(err) != models.KindInvalid {
			t.Errorf("an empty name: %v, want invalid", err)
		}
		ts, err := s.ListTenants(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 2 {
			t.Errorf("%d tenants, want 2: %v", len(ts), tenantRows(ts))
		}
	})
}

// TestCreateTenantConcurrently: tenants created at once under one
// name leave exactly one of that name.
func TestCreateTenantConcurrently(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		s := storetest.Open(t, d)
		ctx := context.Background()
		const n = 8
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			go func() {
				<-start
				_, _, _, err := s.CreateTenant(ctx, "race", 600)
				errs <- err
			}()
		}
		close(start)
		created := 0
		for range n {
			switch err := <-errs; kindOf(err) {
			case "":
				created++
			case models.KindConflict:
			default:
				t.Errorf("create: %v", err)
			}
		}
		if created != 1 {
			t.Errorf("%d tenants created under one name, want 1", created)
		}
	})
}

func TestFindTenant(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d models.Dialect) {
		db := storetest.NewDB(t, d)
		s := db.Open(t, models.Options{})
		ctx := context.Background()
		create := func(name string) string {
			t.Helper()
			tn, _, _, err := s.CreateTenant(ctx, name, 600)
			if err != nil {
				t.Fatal(err)
			}
			return tn.ID
		}
		acme := create("acme")
		// Twins, as a database made before names were unique may hold.
		twin1, twin2 := create("twin"), create("twin 2")
		db.NameTenant(t, twin2, "twin")
		// A tenant named like another's id: the id wins.
		create(acme)

		for _, c := range []struct {
			ref      string
			wantID   string
			wantKind models.Kind
			wantText []string
		}{
			{ref: acme, wantID: acme},
			{ref: "acme", wantID: acme},
			{ref: "twin", wantKind: models.KindConflict, wantText: []string{twin1, twin2}},
			{ref: twin2, wantID: twin2},
			{ref: "ACME", wantKind: models.KindNotFound, wantText: []string{`"ACME"`}},
			{ref: "ten_missing", wantKind: models.KindNotFound},
		} {
			tn, err := s.FindTenant(ctx, c.ref)
			if got := kindOf(err); got != c.wantKind {
				t.Errorf("FindTenant(%q): %v (%q), want kind %q", c.ref, err, got, c.wantKind)
				continue
			}
			for _, w := range c.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("FindTenant(%q): %q does not name %s", c.ref, err, w)
				}
			}
			if c.wantID != "" && tn.ID != c.wantID {
				t.Errorf("FindTenant(%q) = %s, want %s", c.ref, tn.ID, c.wantID)
			}
		}
	})
}
