package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// The resync command is, like recover, a client of the HTTP API.

const resyncUsage = "usage: recordhub webhooks resync ENDPOINT_ID [--wait] [--api URL] [--json]  (the admin key is read from RECORDHUB_ADMIN_KEY)"

// resyncOptions is a parsed `webhooks resync` command line.
type resyncOptions struct {
	endpointID string
	api        string
	wait       bool
	asJSON     bool
}

// resyncStatus is the answer of the start and status routes; raw is that
// answer as sent.
type resyncStatus struct {
	ID         string  `json:"id"`
	WorkflowID string  `json:"workflow_id"`
	Position   string  `json:"position"`
	Status     string  `json:"status"`
	Total      int     `json:"total"`
	Examined   int     `json:"examined"`
	Sent       int     `json:"sent"`
	Covered    int     `json:"covered"`
	Error      *string `json:"error"`
	raw        json.RawMessage
}

func parseResyncArgs(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (resyncOptions, error) {
	var opts resyncOptions
	fs := flag.NewFlagSet("webhooks resync", flag.ContinueOnError)
	fs.BoolVar(&opts.wait, "wait", false, "follow the resync with a progress line until it ends")
	fs.StringVar(&opts.api, "api", "", "base URL of the API (default: $RECORDHUB_API_URL, else http:// and $RECORDHUB_HTTP_ADDR, else http://127.0.0.1:8080)")
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

func resyncStatusURL(c *recoveryClient, endpointID, resyncID string) string {
	return c.base + c.endpointPath(endpointID) + "/resyncs/" + url.PathEscape(resyncID)
}

// resyncEndpoint starts a resync and, with --wait, follows it to its end.
func resyncEndpoint(ctx context.Context, c *recoveryClient, opts resyncOptions, stdout, stderr io.Writer) error {
	var st resyncStatus
	// Only a 429 is retried: after a network error the resync may have started.
	err := retry(ctx, startAttempts, false, func() error {
		raw, err := c.do(ctx, http.MethodPost, c.base+c.endpointPath(opts.endpointID)+"/resync", []byte("{}"), &st)
		st.raw = raw
		return err
	})
	if err != nil {
		return fmt.Errorf("resync %s: %w", opts.endpointID, err)
	}
	if st.ID == "" {
		return errors.New("the API answered without a resync id")
	}
	statusURL := resyncStatusURL(c, opts.endpointID, st.ID)
	info := stdout
	if opts.asJSON {
		info = stderr
	}
	if !opts.wait {
		if opts.asJSON {
			_, err := stdout.Write(append(st.raw, '\n'))
			return err
		}
		fmt.Fprintf(stdout, "resync %s started (workflow %s): %d records as of outbox position %s\nstatus: %s\n", st.ID, st.WorkflowID, st.Total, st.Position, statusURL)
		return nil
	}
	fmt.Fprintf(info, "resync %s started (workflow %s): %d records as of outbox position %s\n", st.ID, st.WorkflowID, st.Total, st.Position)
	p := newProgress(stderr)
	final, err := func() (*resyncStatus, error) {
		defer p.end()
		for {
			var cur resyncStatus
			err := retry(ctx, pollAttempts, true, func() error {
				raw, err := c.do(ctx, http.MethodGet, statusURL, nil, &cur)
				cur.raw = raw
				return err
			})
			if err != nil {
				return nil, err
			}
			p.show(fmt.Sprintf("resyncing %s: %d of %d records, %d sent, %d left to live events (%s)", opts.endpointID, cur.Examined, cur.Total, cur.Sent, cur.Covered, cur.Status))
			if cur.Status != "running" {
				return &cur, nil
			}
			if err := recoverTiming.sleep(ctx, recoverTiming.poll); err != nil {
				return nil, err
			}
		}
	}()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped waiting (%w): resync %s goes on in the background as Temporal workflow %s; its status is at %s", ctx.Err(), st.ID, st.WorkflowID, statusURL)
		}
		return fmt.Errorf("resync %s: %w (its status is at %s)", st.ID, err, statusURL)
	}
	if opts.asJSON {
		if _, err := stdout.Write(append(final.raw, '\n')); err != nil {
			return fmt.Errorf("write status: %w", err)
		}
	}
	if final.Status == "failed" {
		msg := "no reason given"
		if final.Error != nil {
			msg = *final.Error
		}
		return fmt.Errorf("resync %s failed: %s (%d records examined, %d sent)", final.ID, msg, final.Examined, final.Sent)
	}
	if !opts.asJSON {
		fmt.Fprintf(stdout, "resync %s completed: %d records examined, %d sent as record_snapshot, %d left to their live events\n", final.ID, final.Examined, final.Sent, final.Covered)
	}
	return nil
}
