package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/recordhub/recordhub/models"
)

func tenantCommand(ctx context.Context, cfg Config, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: recordhub tenant create NAME [--json] | recordhub tenant create-key TENANT_ID [--admin] [--name N] [--json] | recordhub tenant set-ai-key TENANT_ID")
	}
	switch args[0] {
	case "create":
		var (
			name    string
			asJSON  bool
			unknown []string
		)
		for _, a := range args[1:] {
			switch {
			case a == "--json":
				asJSON = true
			case strings.HasPrefix(a, "-"):
				unknown = append(unknown, a)
			case name == "":
				name = a
			default:
				unknown = append(unknown, a)
			}
		}
		if name == "" || len(unknown) > 0 {
			return errors.New("usage: recordhub tenant create NAME [--json]")
		}
		store, err := openStore(ctx, cfg, cfg.AutoMigrate)
		if err != nil {
			return err
		}
		defer store.Close()
		t, _, secret, err := store.CreateTenant(ctx, name, "", cfg.DefaultRateLimit)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(stdout).Encode(map[string]string{"tenant_id": t.ID, "admin_key": secret})
		}
		fmt.Fprintf(stdout, "tenant %s created (%s)\nadmin key (shown once): %s\n", t.ID, t.Name, secret)
		return nil
	case "create-key":
		return createKeyCommand(ctx, cfg, args[1:], stdout)
	case "set-ai-key":
		if len(args) != 2 {
			return errors.New("usage: recordhub tenant set-ai-key TENANT_ID  (the key is read from stdin)")
		}
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
		if err != nil {
			return fmt.Errorf("read key from stdin: %w", err)
		}
		key := strings.TrimSpace(string(b))
		if key == "" {
			return errors.New("no key on stdin")
		}
		store, err := openStore(ctx, cfg, cfg.AutoMigrate)
		if err != nil {
			return err
		}
		defer store.Close()
		if err := store.SetTenantAIKey(ctx, args[1], key); err != nil {
			return fmt.Errorf("tenant %s: %w", args[1], err)
		}
		fmt.Fprintf(stdout, "AI key of tenant %s stored (encrypted)\n", args[1])
		return nil
	}
	return fmt.Errorf("unknown tenant command %q", args[0])
}

const createKeyUsage = "usage: recordhub tenant create-key TENANT_ID [--admin] [--name N] [--json]"

// createKeyCommand mints a key for a tenant from the command line: the way
// back in for a tenant whose admin keys are all lost, expired or revoked.
func createKeyCommand(ctx context.Context, cfg Config, args []string, stdout io.Writer) error {
	var (
		tenantID string
		name     = "created from the command line"
		admin    bool
		asJSON   bool
	)
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--admin":
			admin = true
		case a == "--json":
			asJSON = true
		case a == "--name" && i+1 < len(args):
			i++
			name = args[i]
		case strings.HasPrefix(a, "--name="):
			name = strings.TrimPrefix(a, "--name=")
		case strings.HasPrefix(a, "-") || tenantID != "":
			return errors.New(createKeyUsage)
		default:
			tenantID = a
		}
	}
	if tenantID == "" {
		return errors.New(createKeyUsage)
	}
	store, err := openStore(ctx, cfg, cfg.AutoMigrate)
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := store.GetTenant(ctx, tenantID); err != nil {
		return fmt.Errorf("tenant %s: %w", tenantID, err)
	}
	k, secret, err := store.CreateKey(ctx, tenantID, models.KeyInput{Name: &name, Admin: &admin}, cfg.DefaultRateLimit)
	if err != nil {
		return fmt.Errorf("tenant %s: %w", tenantID, err)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"tenant_id": tenantID, "key_id": k.ID, "name": k.Name, "admin": k.Admin, "key": secret})
	}
	kind := "key"
	if admin {
		kind = "admin key"
	}
	fmt.Fprintf(stdout, "%s %s (%s) created for tenant %s\nkey (shown once): %s\n", kind, k.ID, k.Name, tenantID, secret)
	return nil
}
