package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/recordhub/recordhub/activities"
	"github.com/recordhub/recordhub/models"
)

// `webhooks listen` is a receiver for developers: subscribe it, change a
// record, and see the delivery arrive with its signatures checked the way
// a receiver would check them.

const (
	listenUsage = "usage: recordhub webhooks listen [--port N] [--secret S] [--status CODE]  (the secret may also come from RECORDHUB_WEBHOOK_SECRET)"

	webhookSecretEnv  = "RECORDHUB_WEBHOOK_SECRET"
	defaultListenPort = 8099
	// listenPath is the path the banner suggests subscribing; any path is
	// accepted.
	listenPath = "/webhooks"
	// maxListenBody bounds what one request may make the receiver hold.
	maxListenBody = 10 << 20
)

// listenOptions is a parsed `webhooks listen` command line.
type listenOptions struct {
	port   int
	secret string
	status int
}

// listenCommand runs `recordhub webhooks listen` until ctx is done.
func listenCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	opts, err := parseListenArgs(args, lookupEnv, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return runListener(ctx, opts, stdout, nil)
}

// parseListenArgs reads the flags; --help prints the usage on stdout and
// returns flag.ErrHelp, a mistake prints it on stderr.
func parseListenArgs(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (listenOptions, error) {
	var opts listenOptions
	fs := flag.NewFlagSet("webhooks listen", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is returned, the usage printed below
	fs.IntVar(&opts.port, "port", defaultListenPort, "port on 127.0.0.1 to listen on (0 picks a free one)")
	fs.StringVar(&opts.secret, "secret", "", "the endpoint's secret, to check the signatures (default: $"+webhookSecretEnv+")")
	fs.IntVar(&opts.status, "status", http.StatusNoContent, "HTTP status to answer every delivery with, 200..599: anything but a 2xx makes recordhub retry, and a 410 disables the endpoint")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, listenUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
		} else {
			usage(stderr)
		}
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected argument %q: %s", fs.Arg(0), listenUsage)
	}
	if opts.port < 0 || opts.port > 65535 {
		return opts, fmt.Errorf("--port %d is out of range 0..65535", opts.port)
	}
	// A 1xx is informational: Go's server would follow it with a 200, and
	// recordhub would see a success, so it is refused rather than faked.
	if opts.status < 200 || opts.status > 599 {
		return opts, fmt.Errorf("--status %d is not a final HTTP status; give one in 200..599", opts.status)
	}
	if opts.secret == "" {
		opts.secret, _ = lookupEnv(webhookSecretEnv)
	}
	opts.secret = strings.TrimSpace(opts.secret)
	return opts, nil
}

// runListener serves deliveries on 127.0.0.1 until ctx is done, printing
// each to out. listening, when set, is called with the address once it
// accepts connections (tests listen on port 0).
func runListener(ctx context.Context, opts listenOptions, out io.Writer, listening func(addr string)) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	addr := ln.Addr().String()
	check := "signatures are checked with the secret given"
	if opts.secret == "" {
		check = "signatures are not checked: give the endpoint's secret with --secret or " + webhookSecretEnv
	}
	fmt.Fprintf(out, "Listening for recordhub webhooks on 127.0.0.1 (Ctrl-C to stop); answering %d; %s.\n", opts.status, check)
	fmt.Fprintf(out, "Subscribe this URL: http://%s%s\n", addr, listenPath)
	fmt.Fprintln(out, "The recordhub server must allow loopback receivers: start it with RECORDHUB_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32")
	srv := &http.Server{Handler: newListenHandler(opts.secret, opts.status, out), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if listening != nil {
		listening(addr)
	}
	select {
	case err := <-serveErr:
		return fmt.Errorf("listen: %w", err)
	case <-ctx.Done():
	}
	// ctx is done: a fresh one bounds the wait for requests in flight.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("listen: shutdown: %w", err)
	}
	return nil
}

// newListenHandler prints each POST to out, with whether its signatures
// verify with secret ("" checks nothing), and answers status.
func newListenHandler(secret string, status int, out io.Writer) http.Handler {
	var (
		std    *standardwebhooks.Webhook
		stdErr error
	)
	if secret != "" {
		std, stdErr = standardWebhook(secret)
	}
	var mu sync.Mutex // one delivery's lines stay together
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "recordhub webhooks listen accepts POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxListenBody))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "--- %s  POST %s\n", time.Now().Format(time.RFC3339), r.URL.RequestURI())
		fmt.Fprintf(&b, "event:               %s\n", orNone(r.Header.Get(activities.HeaderEvent)))
		fmt.Fprintf(&b, "event id:            %s\n", orNone(r.Header.Get(activities.HeaderID)))
		fmt.Fprintf(&b, "webhook-id:          %s\n", orNone(r.Header.Get(activities.HeaderStdID)))
		fmt.Fprintf(&b, "attempt:             %s\n", orNone(r.Header.Get(activities.HeaderAttempt)))
		hexResult, stdResult := "not checked (no --secret)", "not checked (no --secret)"
		if secret != "" {
			hexResult = verifyHexSignature(secret, body, r.Header)
			stdResult = verifyStandardSignature(std, stdErr, body, r.Header)
		}
		fmt.Fprintf(&b, "X-Webhook-Signature: %s\n", hexResult)
		fmt.Fprintf(&b, "webhook-signature:   %s\n", stdResult)
		writeBody(&b, body)
		fmt.Fprintf(&b, "answered %d\n\n", status)
		mu.Lock()
		out.Write(b.Bytes())
		mu.Unlock()
		w.WriteHeader(status)
	})
}

// standardWebhook is the Standard Webhooks verifier for secret, keyed as
// recordhub signs: models.StandardWebhooksKey decides between a
// "whsec_<standard base64>" secret's decoded bytes, as the libraries read
// it, and the whole string of a secret made before that form.
func standardWebhook(secret string) (*standardwebhooks.Webhook, error) {
	return standardwebhooks.NewWebhookRaw(models.StandardWebhooksKey(secret))
}

// verifyHexSignature checks X-Webhook-Signature ("sha256=<hex HMAC-SHA256
// of the body keyed with the secret's UTF-8 bytes>"), and during a
// rotation X-Webhook-Signature-Previous, which carries the digest of the
// other secret.
func verifyHexSignature(secret string, body []byte, h http.Header) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := mac.Sum(nil)
	matches := func(header string) bool {
		got, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(h.Get(header)), "sha256="))
		return err == nil && hmac.Equal(got, want)
	}
	switch {
	case h.Get(activities.HeaderSignature) == "":
		return "FAILED (no X-Webhook-Signature header)"
	case matches(activities.HeaderSignature):
		return "ok"
	case matches(activities.HeaderSignaturePrevious):
		return "ok (" + activities.HeaderSignaturePrevious + " matches: the endpoint's secret is being rotated and this is the previous one)"
	}
	return "FAILED (no digest matches the secret)"
}

// verifyStandardSignature checks webhook-signature with the official
// library, timestamp tolerance included, as a receiver should.
func verifyStandardSignature(wh *standardwebhooks.Webhook, whErr error, body []byte, h http.Header) string {
	if whErr != nil {
		return "FAILED (" + whErr.Error() + ")"
	}
	err := wh.Verify(body, h)
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, standardwebhooks.ErrRequiredHeaders):
		return "FAILED (webhook-id, webhook-timestamp or webhook-signature missing)"
	case errors.Is(err, standardwebhooks.ErrNoMatchingSignature):
		return "FAILED (no signature matches the secret)"
	case errors.Is(err, standardwebhooks.ErrMessageTooOld), errors.Is(err, standardwebhooks.ErrMessageTooNew):
		return "FAILED (webhook-timestamp is more than 5 minutes away from this machine's clock)"
	}
	return "FAILED (" + err.Error() + ")"
}

// writeBody writes a JSON body indented, anything else as it came.
func writeBody(b *bytes.Buffer, body []byte) {
	if len(body) == 0 {
		b.WriteString("(empty body)\n")
		return
	}
	if json.Valid(body) {
		if err := json.Indent(b, body, "", "  "); err == nil {
			b.WriteByte('\n')
			return
		}
	}
	b.WriteString("(not JSON)\n")
	b.Write(body)
	if body[len(body)-1] != '\n' {
		b.WriteByte('\n')
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
