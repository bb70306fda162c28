package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

const webhooksUsage = "usage: recordhub webhooks recover ENDPOINT_ID --since 2h|RFC3339 [--until 30m|RFC3339] [--api URL] [--detach] [--json]  (the admin key is read from RECORDHUB_ADMIN_KEY)"

// recoverOptions is a parsed `webhooks recover` command line.
type recoverOptions struct {
	endpointID string
	since      time.Time
	until      *time.Time
	api        string
	detach     bool
	asJSON     bool
}

// webhooksCommand runs `recordhub webhooks …`; it needs no server
// configuration: recover, resync and update need only the API's address
// and an admin key, listen nothing at all.
func webhooksCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "help" || isHelpArg(args[0])) {
		fmt.Fprint(stdout, webhooksHelp())
		return errHelpShown
	}
	if len(args) == 0 {
		printWebhooksUsages(stderr)
		return errors.New("no webhooks command given")
	}
	switch args[0] {
	case "recover":
		return recoverCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "listen":
		return listenCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "resync":
		return resyncCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "create":
		return createCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "update":
		return updateCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	case "schema":
		return schemaCommand(ctx, args[1:], lookupEnv, stdout, stderr)
	}
	printWebhooksUsages(stderr)
	return fmt.Errorf("unknown webhooks command %q", args[0])
}

// printWebhooksUsages writes the usage line of every webhooks command.
func printWebhooksUsages(w io.Writer) {
	for _, u := range []string{webhooksUsage, resyncUsage, createUsage, updateUsage, schemaUsage, listenUsage} {
		fmt.Fprintln(w, u)
	}
}

// recoverCommand runs `recordhub webhooks recover`.
func recoverCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	opts, err := parseRecoverArgs(args, lookupEnv, time.Now(), stdout, stderr)
	if err != nil {
		return err
	}
	c, err := newAdminClient(opts.api, lookupEnv)
	if err != nil {
		return err
	}
	return recoverEndpoint(ctx, c, opts, stdout, stderr)
}

// parseRecoverArgs parses the flags and the endpoint id, in any order: the
// flag package alone stops at the first argument that is not a flag.
func parseRecoverArgs(args []string, lookupEnv func(string) (string, bool), now time.Time, stdout, stderr io.Writer) (recoverOptions, error) {
	var (
		opts         recoverOptions
		since, until string
	)
	fs := flag.NewFlagSet("webhooks recover", flag.ContinueOnError)
	fs.StringVar(&since, "since", "", "start of the window: a duration ago (2h, 90m) or an RFC 3339 date-time (required)")
	fs.StringVar(&until, "until", "", "end of the window, in the same forms (default: now)")
	fs.StringVar(&opts.api, "api", "", apiFlagHelp)
	fs.BoolVar(&opts.detach, "detach", false, "print the recovery's ids and return without waiting")
	fs.BoolVar(&opts.asJSON, "json", false, "print the final status object as JSON")
	positional, err := parseArgs(fs, webhooksUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 1 || positional[0] == "" {
		return opts, errors.New(webhooksUsage)
	}
	opts.endpointID = positional[0]
	if since == "" {
		return opts, fmt.Errorf("--since is required: %s", webhooksUsage)
	}
	t, err := parseWhen(since, now)
	if err != nil {
		return opts, fmt.Errorf("--since: %w", err)
	}
	opts.since = t
	if until != "" {
		t, err := parseWhen(until, now)
		if err != nil {
			return opts, fmt.Errorf("--until: %w", err)
		}
		if !opts.since.Before(t) {
			return opts, errors.New("--until must be after --since")
		}
		opts.until = &t
	}
	if opts.api, err = apiBase(opts.api, lookupEnv); err != nil {
		return opts, err
	}
	return opts, nil
}

// parseWhen reads "that long ago" (a Go duration) or an RFC 3339 date-time.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q: a duration must be positive (it means that long ago)", s)
		}
		return now.Add(-d).UTC().Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (2h, 90m) nor an RFC 3339 date-time", s)
	}
	return t, nil
}

// recoverEndpoint starts a recovery and, unless detached, follows it to its
// end.
func recoverEndpoint(ctx context.Context, c *client.Client, opts recoverOptions, stdout, stderr io.Writer) error {
	// Only a 429 is retried: after a network error the first request may
	// have started one.
	started, err := callAPI(ctx, startAttempts, false, func(ctx context.Context) (*client.RecoveryStarted, error) {
		return c.StartRecovery(ctx, opts.endpointID, client.RecoveryInput{Since: opts.since, Until: opts.until})
	})
	if err != nil {
		return fmt.Errorf("recover %s: %w", opts.endpointID, err)
	}
	j := job{kind: "recovery", id: started.RecoveryID, workflowID: started.WorkflowID,
		statusURL: c.URL(client.RecoveryPath(opts.endpointID, started.RecoveryID))}
	if opts.detach {
		if opts.asJSON {
			return json.NewEncoder(stdout).Encode(started)
		}
		fmt.Fprintf(stdout, "recovery %s started (workflow %s)\nstatus: %s\n", j.id, j.workflowID, j.statusURL)
		return nil
	}
	// With --json, stdout holds the final object only.
	info := stdout
	if opts.asJSON {
		info = stderr
	}
	fmt.Fprintf(info, "recovery %s started (workflow %s)\n", j.id, j.workflowID)
	st, err := follow(ctx, j, newProgress(stderr),
		func(ctx context.Context) (*client.Recovery, error) { return c.Recovery(ctx, opts.endpointID, j.id) },
		func(st *client.Recovery) (string, bool) {
			return fmt.Sprintf("recovering %s: found %d, replayed %d, failed %d (%s)", opts.endpointID, st.Found, st.Replayed, st.Failed, st.Status), st.Status == "running"
		})
	if err != nil {
		return err
	}
	if opts.asJSON {
		if err := writeRaw(stdout, st.Raw); err != nil {
			return err
		}
	}
	if st.Status == "failed" {
		return fmt.Errorf("recovery %s failed: %s (found %d, replayed %d, failed %d)", st.ID, reason(st.Error), st.Found, st.Replayed, st.Failed)
	}
	if !opts.asJSON {
		fmt.Fprintf(stdout, "recovery %s completed: found %d, replayed %d, failed %d\n", st.ID, st.Found, st.Replayed, st.Failed)
		if st.Capped && st.NextSince != nil {
			fmt.Fprintf(stdout, "recovery %s was capped: events of its window are left; continue with --since %s --until %s\n", st.ID,
				st.NextSince.Format(time.RFC3339Nano), st.Until.Format(time.RFC3339Nano))
		}
	}
	return nil
}
