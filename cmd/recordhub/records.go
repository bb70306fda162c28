package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// The records commands are clients of the HTTP API, as the webhooks ones
// are: follow prints a module's change feed as it happens.

const followUsage = "usage: recordhub records follow MODULE [--after CURSOR|latest] [--types T,…] [--api URL]  (the key is read from RECORDHUB_API_KEY, else RECORDHUB_ADMIN_KEY)"

// apiKeyEnv holds a key of the records commands, which need no admin key:
// follow needs read on the module.
const apiKeyEnv = "RECORDHUB_API_KEY"

// recordsHelp answers `recordhub records --help`.
func recordsHelp() string {
	return usageText("records", "usage: recordhub records COMMAND [ARGUMENTS]",
		"Each answers -h or --help with its usage and flags. None needs the server's configuration.\n")
}

// recordsCommand dispatches `recordhub records`.
func recordsCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "help" || isHelpArg(args[0])) {
		fmt.Fprint(stdout, recordsHelp())
		return errHelpShown
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, followUsage)
		return errors.New("no records command given")
	}
	if args[0] == "follow" {
		return followCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	}
	fmt.Fprintln(stderr, followUsage)
	return fmt.Errorf("unknown records command %q", args[0])
}

// followOptions is a parsed `records follow` command line.
type followOptions struct {
	module string
	api    string
	after  string
	types  string
}

func parseFollowArgs(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (followOptions, error) {
	var opts followOptions
	fs := flag.NewFlagSet("records follow", flag.ContinueOnError)
	fs.StringVar(&opts.after, "after", client.Latest, `where to start: a cursor printed before (each change's "cursor"), "latest" (only changes to come), or "" for the oldest change kept`)
	fs.StringVar(&opts.types, "types", "", "comma-separated event types to print (record_created, record_updated, status_change, custom_data_updated, record_deleted); none: all")
	fs.StringVar(&opts.api, "api", "", apiFlagHelp)
	positional, err := parseArgs(fs, followUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 1 || positional[0] == "" {
		return opts, usageError(stderr, fs, followUsage, errors.New("give one MODULE: its id or slug"))
	}
	opts.module = positional[0]
	if opts.api, err = apiBase(opts.api, lookupEnv); err != nil {
		return opts, err
	}
	return opts, nil
}

// followCommand runs `recordhub records follow`: each change of the module
// as one JSON line (its cursor, then its webhook body), until Ctrl-C. The
// client resumes by itself after a disconnect, from the last change
// printed; a cursor printed can be given to --after to go on later.
func followCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	opts, err := parseFollowArgs(args, lookupEnv, stdout, stderr)
	if err != nil {
		return err
	}
	key, _ := lookupEnv(apiKeyEnv)
	if strings.TrimSpace(key) == "" {
		key, _ = lookupEnv(adminKeyEnv)
	}
	if key = strings.TrimSpace(key); key == "" {
		return fmt.Errorf("%s is not set: export a key with read on the module (or an admin key in %s); keys are never taken as flags, so they stay out of ps", apiKeyEnv, adminKeyEnv)
	}
	c := client.New(opts.api, key, client.WithTimeout(recoverTiming.requestTimeout))
	moduleID, err := resolveModule(ctx, c, opts.module)
	if err != nil {
		return err
	}
	var types []string
	if opts.types != "" {
		types = strings.Split(opts.types, ",")
	}
	follow := client.FollowOptions{
		After: opts.after, Types: types,
		OnReconnect: func(err error, wait time.Duration) {
			fmt.Fprintf(stderr, "recordhub: change stream interrupted (%v); reconnecting in %s\n", err, wait.Round(time.Millisecond))
		},
	}
	for ch, err := range c.FollowChanges(ctx, moduleID, follow) {
		if err != nil {
			return fmt.Errorf("follow %s: %w", opts.module, err)
		}
		if _, err := fmt.Fprintf(stdout, `{"cursor":%q,%s`+"\n", ch.Cursor, strings.TrimPrefix(string(ch.Body), "{")); err != nil {
			return err
		}
	}
	// Ctrl-C: a stop asked for.
	return nil
}

// resolveModule returns the id of a module named by id (mod_…) or by its
// slug among the modules the key may act on.
func resolveModule(ctx context.Context, c *client.Client, module string) (string, error) {
	if strings.HasPrefix(module, "mod_") {
		return module, nil
	}
	mods, err := callAPI(ctx, pollAttempts, true, func(ctx context.Context) ([]client.Module, error) { return c.KeyModules(ctx) })
	if err != nil {
		return "", fmt.Errorf("find module %q: %w", module, err)
	}
	for _, m := range mods {
		if m.Slug == module {
			return m.ID, nil
		}
	}
	return "", fmt.Errorf("no module %q among those the key may read: give its id (mod_…) or slug", module)
}
