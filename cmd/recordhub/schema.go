package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
)

// The schema command is, like recover and resync, a client of the HTTP
// API: it prints what GET /api/admin/modules/:id/event-schemas answers.

const schemaUsage = "usage: recordhub webhooks schema MODULE [--api URL]  (MODULE: its id or slug; the admin key is read from RECORDHUB_ADMIN_KEY)"

// schemaOptions is a parsed `webhooks schema` command line.
type schemaOptions struct {
	module string
	api    string
}

func parseSchemaArgs(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (schemaOptions, error) {
	var opts schemaOptions
	fs := flag.NewFlagSet("webhooks schema", flag.ContinueOnError)
	fs.StringVar(&opts.api, "api", "", apiFlagHelp)
	positional, err := parseArgs(fs, schemaUsage, args, stdout, stderr)
	if err != nil {
		return opts, err
	}
	if len(positional) != 1 || positional[0] == "" {
		return opts, usageError(stderr, fs, schemaUsage, errors.New("give one MODULE: its id or slug"))
	}
	opts.module = positional[0]
	if opts.api, err = apiBase(opts.api, lookupEnv); err != nil {
		return opts, err
	}
	return opts, nil
}

// schemaCommand runs `recordhub webhooks schema`: it prints the JSON
// Schema document of the module's webhook bodies, indented, for a file or
// a type generator.
func schemaCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	opts, err := parseSchemaArgs(args, lookupEnv, stdout, stderr)
	if err != nil {
		return err
	}
	c, err := newAdminClient(opts.api, lookupEnv)
	if err != nil {
		return err
	}
	id, err := resolveModule(ctx, c, opts.module)
	if err != nil {
		return err
	}
	raw, err := callAPI(ctx, pollAttempts, true, func(ctx context.Context) (json.RawMessage, error) {
		return c.EventSchemas(ctx, id)
	})
	if err != nil {
		return fmt.Errorf("event schemas of %s: %w", opts.module, err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return fmt.Errorf("event schemas of %s: the answer is not JSON: %w", opts.module, err)
	}
	b.WriteByte('\n')
	_, err = stdout.Write(b.Bytes())
	return err
}
