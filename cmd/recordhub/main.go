// Command recordhub runs the recordhub service and its administrative
// commands; see the README for the configuration.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage:
  recordhub serve                     run the API (and, later, the webhook worker)
  recordhub migrate                   apply database migrations and exit
  recordhub tenant create NAME [--json]
                                      create a tenant and print its first admin key
  recordhub tenant set-ai-key TENANT_ID
                                      read the tenant's AI provider key from stdin and store it encrypted
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
	cfg, err := configFromEnv(lookupEnv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "serve":
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
