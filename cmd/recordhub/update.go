package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/recordhub/recordhub/api/client"
)

// The update command is, like recover and resync, a client of the HTTP
// API: a PATCH of the endpoint's settings that its flags name.

const updateUsage = "usage: recordhub webhooks update ENDPOINT_ID [--ordering none|record] [--rate-limit N|none] [--max-in-flight N|none] [--api URL] [--json]  (the admin key is read from RECORDHUB_ADMIN_KEY)"

// updateOptions is a parsed `webhooks update` command line.
type updateOptions struct {
	endpointID string
	api        string
	ordering   string
	// rateLimit and maxInFlight are the flags as given: "" unset, "none"
	// (or 0) removes the limit.
	rateLimit, maxInFlight string
	asJSON                 bool
}

// limitFlag reads a --rate-limit or --max-in-flight value: nil for "none"
// or 0, which remove the limit.
func limitFlag(name, v string) (*client.Nullable[int], error) {
	if v == "none" || v == "0" {
		return &client.Nullable[int]{Null: true}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("--%s must be a positive integer, or none (or 0) to remove the limit, not %q", name, v)
	}
	return &client.Nullable[int]{Value: n}, nil
}

// update is the change the flags ask for.
func (o updateOptions) update() (client.EndpointUpdate, error) {
	var u client.EndpointUpdate
	if o.ordering != "" {
		u.Ordering = &o.ordering
	}
	if o.rateLimit != "" {
		n, err := limitFlag("rate-limit", o.rateLimit)
		if err != nil {
			return u, err
		}
		u.RateLimit = &client.Nullable[client.RateLimit]{Null: n.Null, Value: client.RateLimit{PerSecond: n.Value}}
	}
	if o.maxInFlight != "" {
		n, err := limitFlag("max-in-flight", o.maxInFlight)
		if err != nil {
			return u, err
		}
		u.MaxInFlight = n
	}
	return u, nil
}

func parseUpdateArgs(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (updateOptions, error) {
	var opts updateOptions
	fs := flag.NewFlagSet("webhooks update", flag.ContinueOnError)
	fs.StringVar(&opts.ordering, "ordering", "", `"record": the endpoint receives each record's events in the order of the record's versions; "none": as soon as each is dispatched`)
	fs.StringVar(&opts.rateLimit, "rate-limit", "", "at most N requests to the endpoint in any one second, across every worker (1 to 10000); none or 0 removes the limit")
	fs.StringVar(&opts.maxInFlight, "max-in-flight", "", "at most N requests to the endpoint at once (1 to 1000); none or 0 removes the limit")
	fs.StringVar(&opts.api, "api", "", apiFlagHelp)
	fs.BoolVar(&opts.asJSON, "json", false, "print the endpoint as the API answers it")
	positional, err := parseArgs(fs, updateUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 1 || positional[0] == "" {
		return opts, errors.New(updateUsage)
	}
	if opts.ordering == "" && opts.rateLimit == "" && opts.maxInFlight == "" {
		return opts, usageError(stderr, fs, updateUsage, errors.New("nothing to change: give --ordering, --rate-limit or --max-in-flight"))
	}
	if _, err := opts.update(); err != nil {
		return opts, usageError(stderr, fs, updateUsage, err)
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
	change, err := opts.update()
	if err != nil {
		return err
	}
	// A PATCH that sets a value may be sent again: a 429 and a network
	// error are both retried.
	ep, err := callAPI(ctx, startAttempts, true, func(ctx context.Context) (*client.Endpoint, error) {
		return c.UpdateEndpoint(ctx, opts.endpointID, change)
	})
	if err != nil {
		return fmt.Errorf("update %s: %w", opts.endpointID, err)
	}
	if opts.asJSON {
		_, err := stdout.Write(append(ep.Raw, '\n'))
		return err
	}
	rate, inFlight := "none", "none"
	if ep.RateLimit != nil {
		rate = fmt.Sprintf("%d/s", ep.RateLimit.PerSecond)
	}
	if ep.MaxInFlight != nil {
		inFlight = strconv.Itoa(*ep.MaxInFlight)
	}
	_, err = fmt.Fprintf(stdout, "endpoint %s: ordering %s, rate limit %s, max in flight %s\n", ep.ID, ep.Ordering, rate, inFlight)
	return err
}
