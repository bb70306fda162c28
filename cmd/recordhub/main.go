// Command recordhub runs the recordhub service and its administrative
// commands; see the README for the configuration.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const usage = `usage:
  recordhub serve [--role all|api|worker]
                                      run the API, the webhook worker, or both (all, the default)
  recordhub migrate                   apply database migrations and exit
  recordhub tenant create NAME [--json]
                                      create a tenant and print its first admin key
  recordhub tenant set-ai-key TENANT_ID
                                      read the tenant's AI provider key from stdin and store it encrypted
  recordhub webhooks recover ENDPOINT_ID --since 2h|RFC3339 [--until …] [--api URL] [--detach] [--json]
                                      replay an endpoint's failed deliveries of a time window through
                                      the API and show the progress (admin key in RECORDHUB_ADMIN_KEY)
  recordhub healthcheck URL           exit 0 when URL answers 200 (for container health checks)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runCommand(ctx, os.Args[1:], os.LookupEnv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordhub:", err)
		os.Exit(1)
	}
}

// runCommand dispatches a command line; it is main without the process.
func runCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command given")
	}
	if args[0] == "healthcheck" {
		return healthcheck(ctx, args[1:])
	}
	if args[0] == "webhooks" {
		// A client of the API: it needs no server configuration.
		return webhooksCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	}
	cfg, err := configFromEnv(lookupEnv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(stderr)
		fs.StringVar(&cfg.Role, "role", cfg.Role, "all, api or worker")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if err := cfg.validateRole(); err != nil {
			return err
		}
		return run(ctx, cfg, Env{Stdout: stdout, Stderr: stderr})
	case "migrate":
		return migrateCommand(ctx, cfg, stdout)
	case "tenant":
		return tenantCommand(ctx, cfg, args[1:], stdin, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// healthcheck GETs a URL and fails unless it answers 200: distroless images
// have no curl.
func healthcheck(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: recordhub healthcheck URL")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %d", args[0], res.StatusCode)
	}
	return nil
}
