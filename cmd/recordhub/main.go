// Command recordhub runs the recordhub service and its administrative
// commands; cmd/recordhub/README.md lists every setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// commands lists every command for the usage texts: the top one lists
// them all, a group's (tenant, webhooks) its own. Each command's --help
// is its own, beside its code.
var commands = []struct {
	group, synopsis, about string
}{
	{"", "recordhub serve [--role all|api|worker]", "run the API, the webhook worker, or both (all, the default)"},
	{"", "recordhub migrate", "apply database migrations and exit"},
	{"tenant", "recordhub tenant create NAME [--json]", "create a tenant and print its id and first admin key"},
	{"tenant", "recordhub tenant list [--json]", "list the tenants: id, name, creation time"},
	{"tenant", "recordhub tenant create-key TENANT [--admin] [--name N] [--json]", `mint a key for a tenant and print it once (--admin: the way
back in when a tenant's admin keys are lost)`},
	{"tenant", "recordhub tenant set-ai-key TENANT", "read the tenant's AI provider key from stdin and store it encrypted"},
	{"webhooks", "recordhub webhooks recover ENDPOINT_ID --since 2h|RFC3339 [--until …] [--api URL] [--detach] [--json]", `replay an endpoint's failed deliveries of a time window through
the API and show the progress (admin key in RECORDHUB_ADMIN_KEY)`},
	{"webhooks", "recordhub webhooks resync ENDPOINT_ID [--wait] [--api URL] [--json]", `send every current record of the endpoint's modules as a
record_snapshot event, then its live events carry on`},
	{"webhooks", "recordhub webhooks create (--url URL | --url-file FILE) [--events T,…] [--modules ID,…] [--description D] [--api URL] [--json]", `create an endpoint through the API and print its secret once
(an HTTP receiver, or amqp://, amqps://, nats:// for a broker)`},
	{"webhooks", "recordhub webhooks update ENDPOINT_ID [--url URL | --url-file FILE] [--ordering …] [--rate-limit N|none] [--max-in-flight N|none] [--oauth2-… | --tls-…] [--api URL] [--json]", `change an endpoint's settings through the API (URL; ordering:
each record's events in the order of its versions; throttle; OAuth2 client credentials; mutual TLS)`},
	{"webhooks", "recordhub webhooks schema MODULE [--api URL]", `print the JSON Schema of the module's webhook bodies, typed
from its fields (MODULE: its id or slug), for type generators`},
	{"webhooks", "recordhub webhooks listen [--port N] [--secret S] [--status CODE]", "run a local receiver on 127.0.0.1 that prints and verifies deliveries"},
	{"records", "recordhub records follow MODULE [--after CURSOR|latest] [--types T,…] [--api URL]", `print a module's changes as they happen, one JSON line each
(MODULE: its id or slug; the key in RECORDHUB_API_KEY)`},
	{"temporal", "recordhub temporal trim-visibility", `drop the visibility indexes of a Temporal server on PostgreSQL
that recordhub's operators do not search by (TEMPORAL_VISIBILITY_DATABASE_URL)`},
	{"", "recordhub healthcheck URL", "exit 0 when URL answers 200 (for container health checks)"},
}

// usageText is a usage: head, the commands of group (all of them when
// group is empty) a line or two each, then tail.
func usageText(group, head, tail string) string {
	const col = 38 // where the descriptions start
	var b strings.Builder
	b.WriteString(head + "\n\ncommands:\n")
	for _, c := range commands {
		if group != "" && c.group != group {
			continue
		}
		line := "  " + c.synopsis
		if len(line) <= col-2 {
			b.WriteString(line + strings.Repeat(" ", col-len(line)))
		} else {
			b.WriteString(line + "\n" + strings.Repeat(" ", col))
		}
		b.WriteString(strings.ReplaceAll(c.about, "\n", "\n"+strings.Repeat(" ", col)) + "\n")
	}
	b.WriteString("\n" + tail)
	return b.String()
}

// usage is recordhub's usage.
func usage() string {
	return usageText("", "usage: recordhub COMMAND [ARGUMENTS]", `Every command answers -h or --help with its usage, and does nothing else.
TENANT is a tenant's id, or its name when no other tenant has that name.
The tenant commands use the database of "recordhub serve" and never create one: run them
where it runs, or with its RECORDHUB_DATA_DIR (or DATABASE_URL). The configuration is read
from environment variables; cmd/recordhub/README.md lists them.
`)
}

// webhooksHelp answers `recordhub webhooks --help`; each subcommand
// answers its own with its flags.
func webhooksHelp() string {
	return usageText("webhooks", "usage: recordhub webhooks COMMAND [ARGUMENTS]",
		"Each answers -h or --help with its usage and flags. Neither needs the server's configuration.\n")
}

// tenantUsage answers `recordhub tenant --help`.
func tenantUsage() string {
	return usageText("tenant", "usage: recordhub tenant COMMAND [ARGUMENTS]", `TENANT is a tenant's id, or its name when no other tenant has that name.
These commands use the database of "recordhub serve" and never create one: run them where it
runs, or with its RECORDHUB_DATA_DIR (or DATABASE_URL, and RECORDHUB_SECRET_KEY when it sets one).
`)
}

// errHelpShown reports that a command printed its usage because it was
// asked to: the command line succeeded and must do nothing more. It lets a
// parser deep in a command stop it without each caller checking for help.
var errHelpShown = errors.New("help shown")

func main() {
	os.Exit(mainStatus(os.Args[1:]))
}

// mainStatus runs a command line as the process and returns its exit
// status. SIGINT and SIGTERM ask for a graceful stop, and a stop that went
// well is a success (0): Ctrl-C is how a developer ends "recordhub serve",
// and an orchestrator's SIGTERM how it replaces a replica.
func mainStatus(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runCommand(ctx, args, os.LookupEnv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordhub:", err)
		return 1
	}
	return 0
}

// runCommand dispatches a command line; it is main without the process.
// Help, asked for anywhere, is answered before any configuration is read.
func runCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, lookupEnv, stdin, stdout, stderr)
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelpArg(args[0]) {
		fmt.Fprint(stdout, usage())
		return errHelpShown
	}
	switch args[0] {
	case "help":
		if len(args) == 1 {
			fmt.Fprint(stdout, usage())
			return errHelpShown
		}
		// recordhub help tenant create = recordhub tenant create --help
		return dispatch(ctx, append(args[1:len(args):len(args)], "--help"), lookupEnv, stdin, stdout, stderr)
	case "serve":
		return serveCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "migrate":
		return migrateCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "tenant":
		return tenantCommand(ctx, args[1:], lookupEnv, stdin, stdout, stderr)
	case "webhooks":
		// A client of the API: it needs no server configuration.
		return webhooksCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "records":
		// A client of the API too.
		return recordsCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "temporal":
		return temporalCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "healthcheck":
		return healthcheckCommand(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, usage())
	return fmt.Errorf("unknown command %q", args[0])
}

// isHelpArg reports whether a command-line argument asks for help.
func isHelpArg(a string) bool {
	return a == "-h" || a == "-help" || a == "--help"
}

// parseArgs parses a command's flags and returns its other arguments,
// which may come before, between or after the flags (the flag package
// alone stops at the first of them). A help flag anywhere before "--"
// prints usage and the flags to stdout and returns errHelpShown, whatever
// else the line holds. A bad flag prints them to stderr.
func parseArgs(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) ([]string, error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelpArg(a) {
			printUsage(stdout, fs, usage)
			return nil, errHelpShown
		}
	}
	// The flag package would print the error and the usage itself; main
	// prints the error, so only the usage is written here.
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) { // --h
			printUsage(stdout, fs, usage)
			return nil, errHelpShown
		} else if err != nil {
			printUsage(stderr, fs, usage)
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// printUsage writes a command's usage and, when it has any, its flags.
func printUsage(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprintln(w, usage)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// usageError prints a command's usage to stderr and returns err: for a
// command line whose flags parsed but whose arguments are wrong.
func usageError(stderr io.Writer, fs *flag.FlagSet, usage string, err error) error {
	printUsage(stderr, fs, usage)
	return err
}

const serveUsage = `usage: recordhub serve [--role all|api|worker]

Runs the HTTP API, the webhook worker with its outbox dispatcher, or both (all, the default).
With TEMPORAL_ADDRESS empty it also runs an embedded Temporal server and its Web UI. It applies
the database migrations first unless RECORDHUB_AUTO_MIGRATE=false. When no tenant exists it
creates tenant "default" and, unless RECORDHUB_BOOTSTRAP_ADMIN_KEY is set, prints its admin key
once the service is up. The configuration is read from environment variables (cmd/recordhub/README.md lists them).`

func serveCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	role := fs.String("role", RoleAll, "all, api or worker")
	rest, err := parseArgs(fs, serveUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError(stderr, fs, serveUsage, fmt.Errorf("serve takes no arguments, got %q", rest))
	}
	cfg, err := configFromEnv(lookupEnv)
	if err != nil {
		return err
	}
	cfg.Role = *role
	if err := cfg.validateRole(); err != nil {
		return err
	}
	return run(ctx, cfg, Env{Stdout: stdout, Stderr: stderr})
}

const migrateUsage = `usage: recordhub migrate

Applies the SQL migrations to the database and exits: DATABASE_URL, else the SQLite file
$RECORDHUB_DATA_DIR/recordhub.db, which it creates when missing (with the data directory and,
unless RECORDHUB_SECRET_KEY is set, its secret key).`

func migrateCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	rest, err := parseArgs(fs, migrateUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError(stderr, fs, migrateUsage, fmt.Errorf("migrate takes no arguments, got %q", rest))
	}
	cfg, err := configFromEnv(lookupEnv)
	if err != nil {
		return err
	}
	return migrate(ctx, cfg, stdout)
}

const healthcheckUsage = `usage: recordhub healthcheck URL

Exits 0 when URL answers 200 within 5 seconds, else 1: the health check of container images,
which have no curl.`

func healthcheckCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	rest, err := parseArgs(fs, healthcheckUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError(stderr, fs, healthcheckUsage, errors.New("healthcheck takes one URL"))
	}
	return healthcheck(ctx, rest[0])
}

// healthcheck GETs a URL and fails unless it answers 200: distroless images
// have no curl.
func healthcheck(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %d", url, res.StatusCode)
	}
	return nil
}
