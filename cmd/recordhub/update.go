package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/recordhub/recordhub/api/client"
)

// The update command is, like recover and resync, a client of the HTTP
// API: a PATCH of the endpoint's settings that its flags name.

const updateUsage = "usage: recordhub webhooks update ENDPOINT_ID [--url URL | --url-file FILE] [--ordering none|record] [--rate-limit N|none] [--max-in-flight N|none] [--oauth2-token-url URL --oauth2-client-id ID --oauth2-client-secret-file FILE [--oauth2-scopes S,…] [--oauth2-audience A] | --no-auth] [--tls-cert FILE --tls-key FILE] [--tls-ca FILE] [--no-tls] [--api URL] [--json]  (the admin key is read from RECORDHUB_ADMIN_KEY)"

// updateOptions is a parsed `webhooks update` command line.
type updateOptions struct {
	endpointID string
	api        string
	ordering   string
	// rateLimit and maxInFlight are the flags as given: "" unset, "none"
	// (or 0) removes the limit.
	rateLimit, maxInFlight string
	asJSON                 bool
	// auth and tls are the endpoint's new credentials, read from the
	// flags' files; nil leaves them as they are.
	auth *client.EndpointAuth
	tls  *client.EndpointTLS
	// url is the endpoint's new URL; "" leaves it.
	url string
}

// credentialFlags are update's flags for the endpoint's credentials:
// secrets are read from files, never from the command line (which other
// users of the machine can see).
type credentialFlags struct {
	tokenURL, clientID, secretFile, scopes, audience string
	noAuth                                           bool
	certFile, keyFile, caFile                        string
	noTLS                                            bool
}

func (c *credentialFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.tokenURL, "oauth2-token-url", "", "OAuth2 client credentials: the receiver's token endpoint (https)")
	fs.StringVar(&c.clientID, "oauth2-client-id", "", "OAuth2 client credentials: recordhub's client id")
	fs.StringVar(&c.secretFile, "oauth2-client-secret-file", "", "OAuth2 client credentials: a `file` holding the client secret (left out: keep the stored one)")
	fs.StringVar(&c.scopes, "oauth2-scopes", "", "OAuth2 client credentials: scopes to ask for, comma-separated")
	fs.StringVar(&c.audience, "oauth2-audience", "", "OAuth2 client credentials: the audience parameter, when the server wants one")
	fs.BoolVar(&c.noAuth, "no-auth", false, "remove the endpoint's OAuth2 client credentials")
	fs.StringVar(&c.certFile, "tls-cert", "", "mutual TLS: a PEM `file` with the client certificate (and its chain)")
	fs.StringVar(&c.keyFile, "tls-key", "", "mutual TLS: a PEM `file` with the client certificate's private key")
	fs.StringVar(&c.caFile, "tls-ca", "", "a PEM `file` with the CA certificates that verify the receiver, instead of the system's")
	fs.BoolVar(&c.noTLS, "no-tls", false, "remove the endpoint's TLS material")
}

// read builds the endpoint's new credentials from the flags and files.
func (c *credentialFlags) read(opts *updateOptions) error {
	file := func(name string) (string, error) {
		if name == "" {
			return "", nil
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("read %w", err)
		}
		return string(b), nil
	}
	switch {
	case c.noAuth && (c.tokenURL != "" || c.clientID != "" || c.secretFile != ""):
		return errors.New("--no-auth goes alone, without --oauth2-* flags")
	case c.noAuth:
		opts.auth = &client.EndpointAuth{}
	case c.tokenURL != "" || c.clientID != "" || c.secretFile != "" || c.scopes != "" || c.audience != "":
		secret, err := file(c.secretFile)
		if err != nil {
			return err
		}
		opts.auth = &client.EndpointAuth{
			Type: "oauth2_client_credentials", TokenURL: c.tokenURL, ClientID: c.clientID,
			ClientSecret: strings.TrimSpace(secret), Audience: c.audience,
		}
		for sc := range strings.SplitSeq(c.scopes, ",") {
			if sc = strings.TrimSpace(sc); sc != "" {
				opts.auth.Scopes = append(opts.auth.Scopes, sc)
			}
		}
	}
	switch {
	case c.noTLS && (c.certFile != "" || c.keyFile != "" || c.caFile != ""):
		return errors.New("--no-tls goes alone, without --tls-* flags")
	case c.noTLS:
		opts.tls = &client.EndpointTLS{}
	case c.certFile != "" || c.keyFile != "" || c.caFile != "":
		opts.tls = &client.EndpointTLS{}
		var err error
		for _, f := range []struct {
			name string
			dst  *string
		}{{c.certFile, &opts.tls.ClientCertificate}, {c.keyFile, &opts.tls.ClientKey}, {c.caFile, &opts.tls.CACertificates}} {
			if *f.dst, err = file(f.name); err != nil {
				return err
			}
		}
	}
	return nil
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
	if o.url != "" {
		u.URL = &o.url
	}
	u.Auth, u.TLS = o.auth, o.tls
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
	var creds credentialFlags
	creds.register(fs)
	var urls urlFlags
	urls.register(fs)
	positional, err := parseArgs(fs, updateUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 1 || positional[0] == "" {
		return opts, errors.New(updateUsage)
	}
	if err := creds.read(&opts); err != nil {
		return opts, usageError(stderr, fs, updateUsage, err)
	}
	if opts.url, err = urls.read(); err != nil {
		return opts, usageError(stderr, fs, updateUsage, err)
	}
	if opts.url == "" && opts.ordering == "" && opts.rateLimit == "" && opts.maxInFlight == "" && opts.auth == nil && opts.tls == nil {
		return opts, usageError(stderr, fs, updateUsage, errors.New("nothing to change: give --url, --url-file, --ordering, --rate-limit, --max-in-flight, --oauth2-*, --no-auth, --tls-* or --no-tls"))
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
	if err == nil && ep.URL != "" {
		_, err = fmt.Fprintf(stdout, "  url (%s): %s\n", ep.Kind, ep.URL)
	}
	if err == nil && ep.Auth != nil {
		_, err = fmt.Fprintf(stdout, "  auth: %s, token URL %s, client %s, secret %s\n", ep.Auth.Type, ep.Auth.TokenURL, ep.Auth.ClientID, ep.Auth.ClientSecret)
	}
	if err == nil && ep.TLS != nil && ep.TLS.ClientCertificate != nil {
		c := ep.TLS.ClientCertificate
		_, err = fmt.Fprintf(stdout, "  client certificate: %s, expires %s\n", c.Subject, c.NotAfter.Format(time.RFC3339))
	}
	if err == nil && ep.TLS != nil && len(ep.TLS.CACertificates) > 0 {
		_, err = fmt.Fprintf(stdout, "  receiver verified by %d CA certificates\n", len(ep.TLS.CACertificates))
	}
	return err
}
