package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/recordhub/recordhub/api/client"
)

const resyncUsage = "usage: recordhub webhooks resync ENDPOINT_ID [--wait] [--api URL] [--json]  (the admin key is read from RECORDHUB_ADMIN_KEY)"

// resyncOptions is a parsed `webhooks resync` command line.
type resyncOptions struct {
	endpointID string
	api        string
	wait       bool
	asJSON     bool
}

func parseResyncArgs(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (resyncOptions, error) {
	var opts resyncOptions
	fs := flag.NewFlagSet("webhooks resync", flag.ContinueOnError)
	fs.BoolVar(&opts.wait, "wait", false, "follow the resync with a progress line until it ends")
	fs.StringVar(&opts.api, "api", "", apiFlagHelp)
	fs.BoolVar(&opts.asJSON, "json", false, "print the resync's status object (the final one with --wait) as JSON")
	positional, err := parseArgs(fs, resyncUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 1 || positional[0] == "" {
		return opts, errors.New(resyncUsage)
	}
	opts.endpointID = positional[0]
	if opts.api, err = apiBase(opts.api, lookupEnv); err != nil {
		return opts, err
	}
	return opts, nil
}

// resyncCommand runs `recordhub webhooks resync`.
func resyncCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	opts, err := parseResyncArgs(args, lookupEnv, stdout, stderr)
	if err != nil {
		return err
	}
	c, err := newAdminClient(opts.api, lookupEnv)
	if err != nil {
		return err
	}
	return resyncEndpoint(ctx, c, opts, stdout, stderr)
}

// resyncEndpoint starts a resync and, with --wait, follows it to its end.
func resyncEndpoint(ctx context.Context, c *client.Client, opts resyncOptions, stdout, stderr io.Writer) error {
	// Only a 429 is retried: after a network error the resync may have started.
	st, err := callAPI(ctx, startAttempts, false, func(ctx context.Context) (*client.Resync, error) {
		return c.StartResync(ctx, opts.endpointID)
	})
	if err != nil {
		return fmt.Errorf("resync %s: %w", opts.endpointID, err)
	}
	j := job{kind: "resync", id: st.ID, workflowID: st.WorkflowID, statusURL: c.URL(client.ResyncPath(opts.endpointID, st.ID))}
	if !opts.wait {
		if opts.asJSON {
			_, err := stdout.Write(append(st.Raw, '\n'))
			return err
		}
		fmt.Fprintf(stdout, "resync %s started (workflow %s): %d records as of outbox position %s\nstatus: %s\n", st.ID, st.WorkflowID, st.Total, st.Position, j.statusURL)
		return nil
	}
	info := stdout
	if opts.asJSON {
		info = stderr
	}
	fmt.Fprintf(info, "resync %s started (workflow %s): %d records as of outbox position %s\n", st.ID, st.WorkflowID, st.Total, st.Position)
	final, err := follow(ctx, j, newProgress(stderr),
		func(ctx context.Context) (*client.Resync, error) { return c.Resync(ctx, opts.endpointID, j.id) },
		func(cur *client.Resync) (string, bool) {
			return fmt.Sprintf("resyncing %s: %d of %d records, %d sent, %d left to live events (%s)", opts.endpointID, cur.Examined, cur.Total, cur.Sent, cur.Covered, cur.Status), cur.Status == "running"
		})
	if err != nil {
		return err
	}
	if opts.asJSON {
		if err := writeRaw(stdout, final.Raw); err != nil {
			return err
		}
	}
	if final.Status == "failed" {
		return fmt.Errorf("resync %s failed: %s (%d records examined, %d sent)", final.ID, reason(final.Error), final.Examined, final.Sent)
	}
	if !opts.asJSON {
		fmt.Fprintf(stdout, "resync %s completed: %d records examined, %d sent as record_snapshot, %d left to their live events\n", final.ID, final.Examined, final.Sent, final.Covered)
	}
	return nil
}
