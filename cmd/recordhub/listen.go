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
	"unicode"
	"unicode/utf8"

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
		// What the listener read and verified comes first, each line
		// escaped; the body follows, each of its lines after
		// listenBodyMargin, so that no body can print a verdict of its own.
		var b bytes.Buffer
		fmt.Fprintf(&b, "--- %s  POST %s\n", time.Now().Format(time.RFC3339), printable(r.URL.RequestURI()))
		fmt.Fprintf(&b, "event:               %s\n", headerOf(r, activities.HeaderEvent))
		fmt.Fprintf(&b, "event id:            %s\n", headerOf(r, activities.HeaderID))
		fmt.Fprintf(&b, "webhook-id:          %s\n", headerOf(r, activities.HeaderStdID))
		fmt.Fprintf(&b, "attempt:             %s\n", headerOf(r, activities.HeaderAttempt))
		hexResult, stdResult := "not checked (no --secret)", "not checked (no --secret)"
		if secret != "" {
			hexResult = verifyHexSignature(secret, body, r.Header)
			stdResult = verifyStandardSignature(std, stdErr, body, r.Header)
		}
		fmt.Fprintf(&b, "X-Webhook-Signature: %s\n", printable(hexResult))
		fmt.Fprintf(&b, "webhook-signature:   %s\n", printable(stdResult))
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

// listenBodyMargin starts every printed line of a body.
const listenBodyMargin = "  | "

// writeBody writes the body, a JSON body indented, each line after
// listenBodyMargin and escaped (printable).
func writeBody(b *bytes.Buffer, body []byte) {
	if len(body) == 0 {
		b.WriteString("body: (empty)\n")
		return
	}
	text, kind := body, "not JSON"
	var indented bytes.Buffer
	if json.Valid(body) && json.Indent(&indented, body, "", "  ") == nil {
		text, kind = indented.Bytes(), "JSON"
	}
	fmt.Fprintf(b, "body (%s, %d bytes):\n", kind, len(body))
	for line := range strings.SplitSeq(strings.TrimSuffix(string(text), "\n"), "\n") {
		b.WriteString(listenBodyMargin)
		b.WriteString(printable(line))
		b.WriteByte('\n')
	}
}

// headerOf is the request's header name as printed: escaped, or (none).
func headerOf(r *http.Request, name string) string {
	v := r.Header.Get(name)
	if v == "" {
		return "(none)"
	}
	return printable(v)
}

// printable returns s with everything a terminal could act on written as
// an escape: control characters (ESC and BEL among them, CR and LF, C1
// controls such as CSI), the bidirectional overrides that reorder what is
// shown, line and paragraph separators, and bytes that are not UTF-8. A
// sender's text then cannot move the cursor, retitle the window or start
// a line of its own.
func printable(s string) string {
	if !strings.ContainsFunc(s, mustEscape) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case mustEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func mustEscape(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || unicode.In(r, unicode.Zl, unicode.Zp)
}
