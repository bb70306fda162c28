package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/recordhub/recordhub/api/client"
	"github.com/recordhub/recordhub/models"
)

// The create command is, like update, a client of the HTTP API: a POST of
// a new endpoint, whose URL may be an HTTP receiver's or a broker's
// (amqp://, amqps://, nats://).

const createUsage = "usage: recordhub webhooks create (--url URL | --url-file FILE) [--events T,…] [--modules ID,…] [--description D] [--api URL] [--json]  (the admin key is read from RECORDHUB_ADMIN_KEY)"

// defaultCreateEvents are the events of an endpoint created without
// --events: every record event.
var defaultCreateEvents = []string{
	models.EventRecordCreated, models.EventRecordUpdated, models.EventRecordDeleted,
	models.EventStatusChange, models.EventCustomDataUpdated,
}

// urlFlags give an endpoint's URL: on the command line, or in a file when
// it holds a broker's password, which a command line shows to every user
// of the machine.
type urlFlags struct{ url, file string }

func (u *urlFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&u.url, "url", "", "the endpoint's URL: http(s)://…, amqp(s)://…?exchange=…&routing_key=…, or nats://…/subject; a password in it only as **** (the stored one kept)")
	fs.StringVar(&u.file, "url-file", "", "a `file` holding the endpoint's URL, for a broker URL with its password")
}

// read returns the URL the flags give, "" when neither is set.
func (u *urlFlags) read() (string, error) {
	switch {
	case u.url != "" && u.file != "":
		return "", errors.New("give --url or --url-file, not both")
	case u.file != "":
		b, err := os.ReadFile(u.file)
		if err != nil {
			return "", fmt.Errorf("read %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	case u.url != "" && urlHasSecret(u.url):
		return "", errors.New("--url holds a password (or a NATS token), which the command line shows to every user of this machine: write the URL in a file and give --url-file, or write the password as **** to keep the stored one")
	}
	return u.url, nil
}

// urlHasSecret reports whether a URL holds a password or a token other
// than the mask.
func urlHasSecret(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return false
	}
	if p, ok := u.User.Password(); ok {
		return p != models.URLSecretMask
	}
	return models.IsBrokerURL(raw) && u.User.Username() != models.URLSecretMask
}

type createOptions struct {
	api    string
	asJSON bool
	in     client.EndpointInput
}

func parseCreateArgs(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (createOptions, error) {
	var (
		opts            createOptions
		urls            urlFlags
		events, modules string
	)
	fs := flag.NewFlagSet("webhooks create", flag.ContinueOnError)
	urls.register(fs)
	fs.StringVar(&events, "events", strings.Join(defaultCreateEvents, ","), "the event types to deliver, comma-separated")
	fs.StringVar(&modules, "modules", "", "the ids of the modules whose events to deliver, comma-separated (default: every module)")
	fs.StringVar(&opts.in.Description, "description", "", "a description for people")
	fs.StringVar(&opts.api, "api", "", apiFlagHelp)
	fs.BoolVar(&opts.asJSON, "json", false, "print the endpoint as the API answers it, its secret included")
	positional, err := parseArgs(fs, createUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 0 {
		return opts, errors.New(createUsage)
	}
	if opts.in.URL, err = urls.read(); err != nil {
		return opts, usageError(stderr, fs, createUsage, err)
	}
	if opts.in.URL == "" {
		return opts, usageError(stderr, fs, createUsage, errors.New("--url or --url-file is required"))
	}
	opts.in.Events = splitList(events)
	opts.in.ModuleIDs = splitList(modules)
	if opts.api, err = apiBase(opts.api, lookupEnv); err != nil {
		return opts, err
	}
	return opts, nil
}

func splitList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// createCommand runs `recordhub webhooks create`.
func createCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	opts, err := parseCreateArgs(args, lookupEnv, stdout, stderr)
	if err != nil {
		return err
	}
	c, err := newAdminClient(opts.api, lookupEnv)
	if err != nil {
		return err
	}
	// Not retried after a network error: the endpoint may have been made.
	ep, err := callAPI(ctx, startAttempts, false, func(ctx context.Context) (*client.Endpoint, error) {
		return c.CreateEndpoint(ctx, opts.in)
	})
	if err != nil {
		return fmt.Errorf("create endpoint: %w", err)
	}
	if opts.asJSON {
		_, err := stdout.Write(append(ep.Raw, '\n'))
		return err
	}
	_, err = fmt.Fprintf(stdout, "endpoint %s (%s): %s\n  events: %s\n  secret: %s (shown once; GET /api/admin/webhook-endpoints/%s/secret reads it again)\n",
		ep.ID, ep.Kind, ep.URL, strings.Join(ep.Events, ", "), ep.Secret, ep.ID)
	return err
}
