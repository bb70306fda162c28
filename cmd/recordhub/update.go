package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/recordhub/recordhub/api/client"
)

// The update command is, like recover and resync, a client of the HTTP
// API: a PATCH of the endpoint's settings that its flags name.

const updateUsage = "usage: recordhub webhooks update ENDPOINT_ID --ordering none|record [--api URL] [--json]  (the admin key is read from RECORDHUB_ADMIN_KEY)"

// updateOptions is a parsed `webhooks update` command line.
type updateOptions struct {
	endpointID string
	api        string
	ordering   string
	asJSON     bool
}

func parseUpdateArgs(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (updateOptions, error) {
	var opts updateOptions
	fs := flag.NewFlagSet("webhooks update", flag.ContinueOnError)
	fs.StringVar(&opts.ordering, "ordering", "", `"record": the endpoint receives each record's events in the order of the record's versions; "none": as soon as each is dispatched`)
	fs.StringVar(&opts.api, "api", "", apiFlagHelp)
	fs.BoolVar(&opts.asJSON, "json", false, "print the endpoint as the API answers it")
	positional, err := parseArgs(fs, updateUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 1 || positional[0] == "" {
		return opts, errors.New(updateUsage)
	}
	if opts.ordering == "" {
		return opts, usageError(stderr, fs, updateUsage, errors.New("nothing to change: give --ordering"))
	}
	opts.endpointID = positional[0]
	if opts.api, err = apiBase(opts.api, lookupEnv); err != nil {
		return opts, err
	}
	return opts, nil
}

// updateCommand runs `recordhub webhooks update`.
func updateCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	opts, err := parseUpdateArgs(args, lookupEnv, stdout, stderr)
	if err != nil {
		return err
	}
	c, err := newAdminClient(opts.api, lookupEnv)
	if err != nil {
		return err
	}
	// A PATCH that sets a value may be sent again: a 429 and a network
	// error are both retried.
	ep, err := callAPI(ctx, startAttempts, true, func(ctx context.Context) (*client.Endpoint, error) {
		return c.UpdateEndpoint(ctx, opts.endpointID, client.EndpointUpdate{Ordering: &opts.ordering})
	})
	if err != nil {
		return fmt.Errorf("update %s: %w", opts.endpointID, err)
	}
	if opts.asJSON {
		_, err := stdout.Write(append(ep.Raw, '\n'))
		return err
	}
	_, err = fmt.Fprintf(stdout, "endpoint %s: ordering %s\n", ep.ID, ep.Ordering)
	return err
}
