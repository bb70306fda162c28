package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/recordhub/recordhub/models"
)

const (
	tenantCreateUsage = `usage: recordhub tenant create NAME [--json]

Creates a tenant and prints its id and first admin key; the key is shown once. A name that a
tenant has already is refused: "recordhub tenant create-key NAME --admin" mints another admin
key for that tenant.`

	tenantListUsage = `usage: recordhub tenant list [--json]

Lists every tenant, oldest first: its id, name and creation time (UTC).`

	createKeyUsage = `usage: recordhub tenant create-key TENANT [--admin] [--name N] [--json]

Mints a key for a tenant (its id, or its name when no other tenant has it) and prints it once.
With --admin it is an admin key: the way back in for a tenant whose admin keys are all lost,
expired or revoked.`

	setAIKeyUsage = `usage: recordhub tenant set-ai-key TENANT < key-file

Reads the AI provider key of a tenant (its id, or its name when no other tenant has it) from
stdin and stores it encrypted. No API shows or sets it.`
)

// tenantCommand runs `recordhub tenant …`. Each subcommand parses its
// arguments, answering help, before it reads the configuration.
func tenantCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, tenantUsage())
		return errors.New("no tenant command given")
	}
	if args[0] == "help" || isHelpArg(args[0]) {
		fmt.Fprint(stdout, tenantUsage())
		return errHelpShown
	}
	var sub func(context.Context, []string, func(string) (string, bool), io.Reader, io.Writer, io.Writer) error
	switch args[0] {
	case "create":
		sub = tenantCreate
	case "list":
		sub = tenantList
	case "create-key":
		sub = tenantCreateKey
	case "set-ai-key":
		sub = tenantSetAIKey
	default:
		fmt.Fprint(stderr, tenantUsage())
		return fmt.Errorf("unknown tenant command %q", args[0])
	}
	return sub(ctx, args[1:], lookupEnv, stdin, stdout, stderr)
}

// openTenantStore reads the configuration and opens the existing database.
func openTenantStore(ctx context.Context, lookupEnv func(string) (string, bool)) (*models.Store, Config, error) {
	cfg, err := configFromEnv(lookupEnv)
	if err != nil {
		return nil, cfg, err
	}
	store, err := openExistingStore(ctx, cfg)
	return store, cfg, err
}

func tenantCreate(ctx context.Context, args []string, lookupEnv func(string) (string, bool), _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tenant create", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, `print {"tenant_id": …, "admin_key": …}`)
	rest, err := parseArgs(fs, tenantCreateUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 || strings.TrimSpace(rest[0]) == "" {
		return usageError(stderr, fs, tenantCreateUsage, errors.New("tenant create takes one NAME"))
	}
	name := rest[0]
	store, cfg, err := openTenantStore(ctx, lookupEnv)
	if err != nil {
		return err
	}
	defer store.Close()
	t, _, secret, err := store.CreateTenant(ctx, name, cfg.DefaultRateLimit)
	if models.ErrorKind(err) == models.KindConflict {
		return fmt.Errorf("%w; for another admin key of that tenant: recordhub tenant create-key %s --admin", err, shellQuote(name))
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{"tenant_id": t.ID, "admin_key": secret})
	}
	fmt.Fprintf(stdout, "tenant %s created (%s)\nadmin key (shown once): %s\n", t.ID, t.Name, secret)
	return nil
}

func tenantList(ctx context.Context, args []string, lookupEnv func(string) (string, bool), _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tenant list", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, `print an array of {"id": …, "name": …, "created_at": …}`)
	rest, err := parseArgs(fs, tenantListUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError(stderr, fs, tenantListUsage, fmt.Errorf("tenant list takes no arguments, got %q", rest))
	}
	store, _, err := openTenantStore(ctx, lookupEnv)
	if err != nil {
		return err
	}
	defer store.Close()
	tenants, err := store.ListTenants(ctx)
	if err != nil {
		return err
	}
	type row struct {
		ID        string    `json:"id"`
		Name      string    `json:"name"`
		CreatedAt time.Time `json:"created_at"`
	}
	rows := make([]row, len(tenants))
	for i, t := range tenants {
		rows[i] = row{t.ID, t.Name, t.CreatedAt.UTC()}
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCREATED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Name, r.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// tenantCreateKey mints a key for a tenant from the command line: the way
// back in for a tenant whose admin keys are all lost, expired or revoked.
func tenantCreateKey(ctx context.Context, args []string, lookupEnv func(string) (string, bool), _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tenant create-key", flag.ContinueOnError)
	admin := fs.Bool("admin", false, "make an admin key")
	name := fs.String("name", "created from the command line", "the key's name")
	asJSON := fs.Bool("json", false, `print {"tenant_id": …, "key_id": …, "name": …, "admin": …, "key": …}`)
	rest, err := parseArgs(fs, createKeyUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError(stderr, fs, createKeyUsage, errors.New("tenant create-key takes one TENANT"))
	}
	store, cfg, err := openTenantStore(ctx, lookupEnv)
	if err != nil {
		return err
	}
	defer store.Close()
	t, err := store.FindTenant(ctx, rest[0])
	if err != nil {
		return err
	}
	k, secret, err := store.CreateKey(ctx, t.ID, models.KeyInput{Name: name, Admin: admin}, cfg.DefaultRateLimit)
	if err != nil {
		return fmt.Errorf("tenant %s: %w", t.ID, err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"tenant_id": t.ID, "key_id": k.ID, "name": k.Name, "admin": k.Admin, "key": secret})
	}
	kind := "key"
	if *admin {
		kind = "admin key"
	}
	fmt.Fprintf(stdout, "%s %s (%s) created for tenant %s (%s)\nkey (shown once): %s\n", kind, k.ID, k.Name, t.ID, t.Name, secret)
	return nil
}

func tenantSetAIKey(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tenant set-ai-key", flag.ContinueOnError)
	rest, err := parseArgs(fs, setAIKeyUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError(stderr, fs, setAIKeyUsage, errors.New("tenant set-ai-key takes one TENANT (the key is read from stdin)"))
	}
	store, _, err := openTenantStore(ctx, lookupEnv)
	if err != nil {
		return err
	}
	defer store.Close()
	// The tenant first: a wrong one is refused without waiting for stdin.
	t, err := store.FindTenant(ctx, rest[0])
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
	if err != nil {
		return fmt.Errorf("read key from stdin: %w", err)
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return errors.New("no key on stdin")
	}
	if err := store.SetTenantAIKey(ctx, t.ID, key); err != nil {
		return fmt.Errorf("tenant %s: %w", t.ID, err)
	}
	fmt.Fprintf(stdout, "AI key of tenant %s (%s) stored (encrypted)\n", t.ID, t.Name)
	return nil
}

// shellQuote quotes s for a POSIX shell, where it needs quoting.
func shellQuote(s string) string {
	unsafe := strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("_./@%+=:,-", r))
	})
	if s != "" && unsafe < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
